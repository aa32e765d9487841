package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// controlPlane is one side's running control plane: its processes (in
// start order) and an admin client configuration.
type controlPlane struct {
	name       string
	procs      []*proc
	kubeconfig string // admin
	config     *rest.Config
	client     *kubernetes.Clientset
	pki        *pki      // upstream's; nil for berth
	ready      time.Time // when it reported ready (e2e)
}

func (c *controlPlane) pids() []int {
	var pids []int
	for _, p := range c.procs {
		pids = append(pids, p.pid())
	}
	return pids
}

// usageByProcess is each process's RSS in MiB.
func (c *controlPlane) usageByProcess() map[string]float64 {
	out := map[string]float64{}
	for _, p := range c.procs {
		out[p.name] = mib(rssOf(p.pid()))
	}
	return out
}

// stop ends the processes in reverse order.
func (c *controlPlane) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop(2 * time.Minute)
	}
}

// alive fails with a process's log tail when one has exited.
func (c *controlPlane) alive() error {
	for _, p := range c.procs {
		if p.exited() {
			return fmt.Errorf("%s exited:\n%s", p.name, p.logTail())
		}
	}
	return nil
}

// connect builds the admin client with room for the driver's bursts (no
// client-side throttling: the servers' own limits apply).
func (c *controlPlane) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0
	c.config = cfg
	c.client, err = kubernetes.NewForConfig(cfg)
	return err
}

// startUpstream runs etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler (v1.34, hack/conformance/build.sh) under dir, with the
// flags hack/conformance/upstream.sh gives them, and waits until the
// apiserver is ready and the controller manager has created the default
// ServiceAccount.
func (b *bench) startUpstream(ctx context.Context, dir string) (_ *controlPlane, err error) {
	c := &controlPlane{name: "upstream"}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	p, err := newPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	c.pki = p
	if err := p.issue("apiserver", "kube-apiserver", nil, true, []net.IP{net.ParseIP("127.0.0.1"), firstIP(b.svcCIDR)},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}); err != nil {
		return nil, err
	}
	if err := p.issue("admin", "kubernetes-admin", []string{"system:masters"}, false, nil, nil); err != nil {
		return nil, err
	}
	etcdPort, etcdPeer, apiPort, kcmPort, schedPort := freePort(), freePort(), freePort(), freePort(), freePort()
	server := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := p.kubeconfig(c.kubeconfig, server, "admin"); err != nil {
		return nil, err
	}
	start := func(name string, args ...string) error {
		pr, err := startProc(name, filepath.Join(b.logs, name+".log"), filepath.Join(b.upstreamBin, name), args...)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, pr)
		return nil
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	if err := start("etcd", "--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL, "--listen-metrics-urls", "", "--log-level", "warn"); err != nil {
		return nil, err
	}
	if err := waitFor(time.Minute, 200*time.Millisecond, "etcd", func() (bool, error) {
		conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(etcdPort))
		if err == nil {
			conn.Close()
		}
		return err == nil, c.alive()
	}); err != nil {
		return nil, err
	}
	if err := start("kube-apiserver", "--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(apiPort), "--advertise-address", "127.0.0.1",
		"--service-cluster-ip-range", b.svcCIDR, "--cert-dir", filepath.Join(dir, "apiserver"),
		"--client-ca-file", p.path("ca.crt"), "--tls-cert-file", p.path("apiserver.crt"), "--tls-private-key-file", p.path("apiserver.key"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", p.path("sa.pub"), "--service-account-signing-key-file", p.path("sa.key"),
		"--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction", "--allow-privileged=true",
		"--kubelet-preferred-address-types", "InternalIP,Hostname"); err != nil {
		return nil, err
	}
	if err := c.connect(); err != nil {
		return nil, err
	}
	if err := waitFor(3*time.Minute, 500*time.Millisecond, "kube-apiserver /readyz", func() (bool, error) {
		body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", c.alive()
	}); err != nil {
		return nil, err
	}
	common := []string{"--kubeconfig", c.kubeconfig, "--authentication-kubeconfig", c.kubeconfig,
		"--authorization-kubeconfig", c.kubeconfig, "--bind-address", "127.0.0.1", "--leader-elect=false"}
	if err := start("kube-controller-manager", append(common, "--secure-port", strconv.Itoa(kcmPort),
		"--service-account-private-key-file", p.path("sa.key"), "--root-ca-file", p.path("ca.crt"), "--use-service-account-credentials",
		"--cluster-signing-cert-file", p.path("ca.crt"), "--cluster-signing-key-file", p.path("ca.key"),
		"--allocate-node-cidrs", "--cluster-cidr", b.clusterCIDR, "--node-cidr-mask-size", "29",
		"--service-cluster-ip-range", b.svcCIDR)...); err != nil {
		return nil, err
	}
	if err := start("kube-scheduler", append(common, "--secure-port", strconv.Itoa(schedPort))...); err != nil {
		return nil, err
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 5 * time.Second}
	for _, port := range []int{kcmPort, schedPort} {
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
		if err := waitFor(3*time.Minute, 500*time.Millisecond, url, func() (bool, error) {
			resp, err := insecure.Get(url)
			if err != nil {
				return false, c.alive()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, c.alive()
		}); err != nil {
			return nil, err
		}
	}
	return c, c.waitDefaultServiceAccount(ctx)
}

// waitDefaultServiceAccount waits for the controllers to have created the
// default namespace's ServiceAccount and root CA ConfigMap (pods need both).
func (c *controlPlane) waitDefaultServiceAccount(ctx context.Context) error {
	return waitFor(3*time.Minute, 500*time.Millisecond, "the default ServiceAccount and kube-root-ca.crt", func() (bool, error) {
		_, err1 := c.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		_, err2 := c.client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err1 == nil && err2 == nil, c.alive()
	})
}

// firstIP is the first address of an IPv4 CIDR (the kubernetes Service's).
func firstIP(cidr string) net.IP {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil
	}
	ip := n.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1)
}

// startBerthServer runs `berth server` (embedded etcd, controllers,
// scheduler) under dir, with more flags extra, and waits until it serves
// and has created the default ServiceAccount.
func (b *bench) startBerthServer(ctx context.Context, dir string, extra ...string) (_ *controlPlane, err error) {
	c := &controlPlane{name: "berth"}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	args := append([]string{"server", "--data-dir", dir,
		"--listen", "127.0.0.1:0", "--service-cluster-ip-range", b.svcCIDR,
		"--cluster-cidr", b.clusterCIDR, "--node-cidr-mask-size", "29"}, extra...)
	pr, err := startProc("berth server", filepath.Join(b.logs, filepath.Base(dir)+".log"), b.berth, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, pr)
	c.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := waitFor(3*time.Minute, 200*time.Millisecond, "berth server's listen-address", func() (bool, error) {
		return fileExists(filepath.Join(dir, "listen-address")) && fileExists(c.kubeconfig), c.alive()
	}); err != nil {
		return nil, err
	}
	if err := c.connect(); err != nil {
		return nil, err
	}
	return c, c.waitDefaultServiceAccount(ctx)
}
