// Package up tests `berth up` as a process, from outside: the kubeconfig it
// writes, real kubectl against its control plane, a static pod pulled
// through a registry mirror from the registries file and run on its own
// containerd (seen through the CRI socket), pods created with kubectl
// apply that the scheduler puts on the joined agent's node (Running with an
// IP from --pod-cidr, kubectl logs, kubectl delete → gone from containerd),
// and a SIGTERM after which nothing is left: no containerd or shim process,
// no mount under the data dir, no pod bridge.
package up

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/integration/harness"
	"berth/integration/nodeenv"
	"berth/internal/prereq"
)

// requirePrerequisites fails under CI=true and skips otherwise when the
// machine cannot run a cluster.
func requirePrerequisites(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the berth up integration test")
	}
	if err := nodeenv.CheckPrerequisites(); err != nil {
		prereq.Missing(t, "berth up needs: %v", err)
	}
}

// built are the binaries of binaries(), built once for the package and
// removed by TestMain.
var built struct {
	once         sync.Once
	dir          string
	berth, pause string
	err          error
}

// TestMain removes the binaries the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	harness.RemoveBinary()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// binaries returns berth ($BERTH_BIN or built like the Makefile builds
// it) and the static pause binary (beside it, else built with
// CGO_ENABLED=0), built at most once per package.
func binaries(t *testing.T) (berth, pause string) {
	t.Helper()
	built.once.Do(func() {
		built.err = buildBinaries()
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.berth, built.pause
}

func buildBinaries() error {
	var err error
	if built.berth, err = harness.BuildBinary(); err != nil {
		return err
	}
	built.pause = filepath.Join(filepath.Dir(built.berth), "pause")
	if _, err := os.Stat(built.pause); err == nil {
		return nil
	}
	if built.dir, err = os.MkdirTemp("", "berth-up-test-"); err != nil {
		return err
	}
	built.pause = filepath.Join(built.dir, "pause")
	cmd := exec.Command("go", "build", "-o", built.pause, "berth/cmd/pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build berth/cmd/pause: %v\n%s", err, msg)
	}
	return nil
}

// TestUpRunsAClusterAndLeavesNothingBehind is the whole life of `berth up`.
func TestUpRunsAClusterAndLeavesNothingBehind(t *testing.T) {
	requirePrerequisites(t)
	kubectl := harness.RequireKubectl(t)
	berth, _ := binaries(t)
	bridge, cidr := harness.ClaimSubnet(t, 223, "berthup")
	// A service range of its own: agents of clusters tested in parallel
	// program their proxies in the same host network namespace.
	serviceCIDR := strings.Replace(cidr, "10.223.", "10.227.", 1)
	kubernetesIP := strings.TrimSuffix(serviceCIDR, "0/24") + "1"
	dataDir := shortTempDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// Every address: pods reach the apiserver at the node's address,
	// which default/kubernetes publishes.
	up := startUp(t, ctx, dataDir, upOptions{Listen: "0.0.0.0:" + strconv.Itoa(harness.FreePort(t)),
		Bridge: bridge, PodCIDR: cidr, ServiceCIDR: serviceCIDR, HTTPPort: harness.FreePort(t), HTTPSPort: harness.FreePort(t)})
	cmd, exited, stdout := up.cmd, up.exited, &up.stdout

	kubeconfig := up.kubeconfig
	wantLine := "use: kubectl --kubeconfig " + kubeconfig + " get pods"
	poll(t, ctx, exited, "berth up to print the kubectl line", func() bool { return strings.Contains(stdout.String(), wantLine) })
	if want := "pod CIDR " + cidr; !strings.Contains(stdout.String(), want) {
		t.Errorf("berth up does not print %q:\n%s", want, stdout.String())
	}

	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "ns", "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get ns: %v\n%s", err, out)
	}
	for _, ns := range []string{"namespace/default", "namespace/kube-system"} {
		if !strings.Contains(string(out), ns) {
			t.Errorf("kubectl get ns lacks %s:\n%s", ns, out)
		}
	}

	// A static pod whose image comes from "docker.io" — the mirror.
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: sleeper, namespace: default}
spec:
  containers:
  - name: sleeper
    image: docker.io/berth/busybox:1
    command: ["sleep", "3600"]
`
	if err := os.WriteFile(filepath.Join(dataDir, "manifests", "sleeper.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dataDir, "containerd", "containerd.sock")
	client, err := cri.New(ctx, cri.Config{Endpoint: "unix://" + socket})
	if err != nil {
		t.Fatalf("berth up's containerd: %v", err)
	}
	defer client.Close()
	poll(t, ctx, exited, "the static pod's container to run", func() bool {
		cs, err := client.ListContainers(ctx, &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{"io.kubernetes.container.name": "sleeper"},
		})
		return err == nil && len(cs) == 1
	})
	if _, err := netlink.LinkByName(bridge); err != nil {
		t.Errorf("the pod bridge %s does not exist while a pod runs: %v", bridge, err)
	}
	if len(processesMentioning(socket)) == 0 {
		t.Fatal("no process serves the containerd socket while berth up runs")
	}

	// Pods through the API, with no nodeName: the scheduler binds them to
	// the joined agent's node.
	kc := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	podManifest := func(name string, command string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: docker.io/berth/busybox:1
    command: ["sh", "-c", %q]
`, name, command)
	}
	apply := filepath.Join(t.TempDir(), "pods.yaml")
	pods := podManifest("api-sleeper", "sleep 3600") + "---\n" + podManifest("api-echo", "echo hello from berth up; sleep 3600")
	if err := os.WriteFile(apply, []byte(pods), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kc("apply", "-f", apply); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	podNet := netip.MustParsePrefix(cidr)
	var nodeName string
	for _, name := range []string{"api-sleeper", "api-echo"} {
		var last string
		poll(t, ctx, exited, "pod "+name+" to be Running with an IP", func() bool {
			out, err := kc("get", "pod", name, "-o", "jsonpath={.status.phase} {.status.podIP} {.spec.nodeName}")
			last = out
			f := strings.Fields(out)
			return err == nil && len(f) == 3 && f[0] == "Running"
		})
		f := strings.Fields(last)
		ip, err := netip.ParseAddr(f[1])
		if err != nil || !podNet.Contains(ip) || ip == podNet.Addr() {
			t.Errorf("pod %s has IP %q, want a host address of --pod-cidr %s", name, f[1], cidr)
		}
		if f[2] == "" {
			t.Errorf("pod %s has no nodeName", name)
		}
		nodeName = f[2]
	}
	var logs string
	poll(t, ctx, exited, "kubectl logs api-echo to show its line", func() bool {
		out, err := kc("logs", "api-echo")
		logs = out
		return err == nil && strings.Contains(out, "hello from berth up")
	})
	if strings.TrimSpace(logs) != "hello from berth up" {
		t.Errorf("kubectl logs api-echo = %q, want exactly the echoed line", logs)
	}
	checkBerthKubectl(t, ctx, berth, dataDir, nodeName)
	checkDaemonSet(t, ctx, exited, kc, nodeName)

	// default/kubernetes points at the node's address, which a pod reaches
	// (plain HTTP to the TLS port: Go's server answers 400).
	var ep string
	poll(t, ctx, exited, "default/kubernetes endpoints", func() bool {
		out, err := kc("get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}")
		ep = out
		return err == nil && !strings.HasPrefix(out, ":")
	})
	if a, err := netip.ParseAddrPort(ep); err != nil || a.Addr().IsLoopback() {
		t.Fatalf("default/kubernetes endpoint %q: want a non-loopback address", ep)
	}
	if out, _ := kc("exec", "api-sleeper", "--", "wget", "-q", "-O-", "http://"+ep+"/"); !strings.Contains(out, "400") {
		t.Errorf("a pod did not reach the apiserver at %s: %s", ep, out)
	}
	if out, err := kc("get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"); err != nil || out != kubernetesIP {
		t.Errorf("kubernetes service cluster IP %q (%v)", out, err)
	}

	checkServiceProxy(t, ctx, exited, kc, bridge, kubernetesIP)
	checkClusterDNS(t, ctx, exited, kc, cidr, kubernetesIP)
	checkJob(t, ctx, exited, kc)

	if out, err := kc("delete", "pod", "api-sleeper", "--wait=true"); err != nil {
		t.Fatalf("kubectl delete pod: %v\n%s", err, out)
	}
	podLabel := map[string]string{"io.kubernetes.pod.name": "api-sleeper", "io.kubernetes.pod.namespace": "default"}
	poll(t, ctx, exited, "the deleted pod's containers and sandbox to leave containerd", func() bool {
		cs, err := client.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: podLabel})
		if err != nil || len(cs) > 0 {
			return false
		}
		ss, err := client.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: podLabel})
		return err == nil && len(ss) == 0
	})
	if out, err := kc("get", "pod", "api-sleeper"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("kubectl get pod api-sleeper after delete: %v\n%s", err, out)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("berth up did not exit after SIGTERM")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("berth up exited %d after SIGTERM, want 0", code)
	}
	if !strings.Contains(stdout.String(), "berth up: stopped") {
		t.Errorf("berth up did not report a clean stop:\n%s", stdout.String())
	}
	if pids := processesMentioning(socket); len(pids) > 0 {
		t.Errorf("processes still serving berth up's containerd (containerd, shims): %v", pids)
	}
	if pids := processesMentioning(dataDir); len(pids) > 0 {
		t.Errorf("processes still naming the data dir: %v", pids)
	}
	if mounts := mountsUnder(t, dataDir); len(mounts) > 0 {
		t.Errorf("still mounted under the data dir: %v", mounts)
	}
	if _, err := netlink.LinkByName(bridge); err == nil {
		t.Errorf("the pod bridge %s is still there", bridge)
	}
	if out, err := exec.Command("nft", "list", "tables").CombinedOutput(); err != nil || strings.Contains(string(out), proxyTable(bridge)) {
		t.Errorf("the service proxy's table %s is left after berth up stopped (%v):\n%s", proxyTable(bridge), err, out)
	}
}

// checkDaemonSet runs a DaemonSet on the cluster's one node: its pod is
// pinned to the node, scheduled there and Running on containerd, and
// kubectl rollout status reports the rollout done; deleting the daemon set
// removes the pod.
func checkDaemonSet(t *testing.T, ctx context.Context, exited <-chan struct{}, kc func(...string) (string, error), nodeName string) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "ds.yaml")
	ds := `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-agent, namespace: default}
spec:
  selector:
    matchLabels: {app: node-agent}
  template:
    metadata:
      labels: {app: node-agent}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: docker.io/berth/busybox:1
        command: ["sleep", "3600"]
`
	if err := os.WriteFile(manifest, []byte(ds), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kc("apply", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply daemonset: %v\n%s", err, out)
	}
	var last string
	poll(t, ctx, exited, "the daemon set's pod to be Running on the node", func() bool {
		out, err := kc("get", "pods", "-l", "app=node-agent", "-o", "jsonpath={range .items[*]}{.status.phase} {.spec.nodeName}{\"\\n\"}{end}")
		last = out
		return err == nil && strings.TrimSpace(out) == "Running "+nodeName
	})
	if out, err := kc("rollout", "status", "daemonset/node-agent", "--timeout=60s"); err != nil || !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("kubectl rollout status daemonset (pods: %q): %v\n%s", last, err, out)
	}
	if out, err := kc("delete", "daemonset", "node-agent", "--wait=true"); err != nil {
		t.Fatalf("kubectl delete daemonset: %v\n%s", err, out)
	}
	poll(t, ctx, exited, "the daemon set's pod to be gone", func() bool {
		out, err := kc("get", "pods", "-l", "app=node-agent", "-o", "name")
		return err == nil && strings.TrimSpace(out) == ""
	})
}

// proxyTable is the nftables table of the agent on bridge (agent.Config.ProxyTable's default).
func proxyTable(bridge string) string { return "berth-proxy-" + bridge }

// checkServiceProxy: pod api-sleeper reaches a web pod through its Service's
// ClusterIP, and the apiserver through the kubernetes Service's; the agent's
// table is in the kernel meanwhile.
func checkServiceProxy(t *testing.T, ctx context.Context, exited <-chan struct{}, kc func(...string) (string, error), bridge, kubernetesIP string) {
	t.Helper()
	web := `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: docker.io/berth/busybox:1
    command: ["sh", "-c", "mkdir -p /www && echo hello from web > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports: [{name: http, containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
`
	file := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(file, []byte(web), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kc("apply", "-f", file); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	ip, err := kc("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil || ip == "" {
		t.Fatalf("service web has no cluster IP %q: %v", ip, err)
	}
	// busybox 1.35's wget crashes with -T: timeout bounds it instead.
	var last string
	poll(t, ctx, exited, "pod api-sleeper to reach the web pod through its Service's ClusterIP", func() bool {
		out, _ := kc("exec", "api-sleeper", "--", "timeout", "3", "wget", "-q", "-O-", "http://"+ip+"/")
		last = out
		return strings.TrimSpace(out) == "hello from web"
	})
	if t.Failed() {
		t.Logf("last answer: %s", last)
	}
	// The kubernetes Service leads to the apiserver (plain HTTP to its TLS
	// port: Go's server answers 400).
	if out, _ := kc("exec", "api-sleeper", "--", "timeout", "3", "wget", "-q", "-O-", "http://"+kubernetesIP+":443/"); !strings.Contains(out, "400") {
		t.Errorf("a pod did not reach the apiserver through the kubernetes Service's ClusterIP: %s", out)
	}
	if out, err := exec.Command("nft", "list", "tables").CombinedOutput(); err != nil || !strings.Contains(string(out), "table ip "+proxyTable(bridge)) {
		t.Errorf("the service proxy's table %s is not in the kernel (%v):\n%s", proxyTable(bridge), err, out)
	}
	if out, err := kc("delete", "-f", file, "--wait=true"); err != nil {
		t.Errorf("kubectl delete: %v\n%s", err, out)
	}
}

// checkClusterDNS: pod api-sleeper's resolv.conf names the cluster DNS on
// the bridge's gateway with the cluster's search path, and through it the
// pod resolves the kubernetes Service by its full and its short name and
// reaches a headless Service's pod by name (no service proxy involved).
func checkClusterDNS(t *testing.T, ctx context.Context, exited <-chan struct{}, kc func(...string) (string, error), cidr, kubernetesIP string) {
	t.Helper()
	gateway := netip.MustParsePrefix(cidr).Addr().Next().String()
	out, err := kc("exec", "api-sleeper", "--", "cat", "/etc/resolv.conf")
	if err != nil {
		t.Fatalf("cat /etc/resolv.conf: %v\n%s", err, out)
	}
	for _, want := range []string{"nameserver " + gateway, "search default.svc.cluster.local svc.cluster.local cluster.local", "options ndots:5"} {
		if !strings.Contains(out, want) {
			t.Errorf("the pod's resolv.conf lacks %q:\n%s", want, out)
		}
	}
	// busybox's nslookup tries every search domain and exits 1 when one
	// of them is NXDOMAIN (kubernetes.svc.cluster.local is): its answer is
	// what counts.
	for _, name := range []string{"kubernetes.default.svc.cluster.local", "kubernetes"} {
		out, _ := kc("exec", "api-sleeper", "--", "nslookup", "-type=a", name)
		if !strings.Contains(out, "Name:\tkubernetes.default.svc.cluster.local\nAddress: "+kubernetesIP+"\n") {
			t.Errorf("nslookup %s in a pod:\n%s", name, out)
		}
	}
	web := `apiVersion: v1
kind: Pod
metadata: {name: dns-web, namespace: default, labels: {app: dns-web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: docker.io/berth/busybox:1
    command: ["sh", "-c", "mkdir /www && echo hello by name > /www/index.html && exec httpd -f -p 8080 -h /www"]
---
apiVersion: v1
kind: Service
metadata: {name: dns-web, namespace: default}
spec:
  clusterIP: None
  selector: {app: dns-web}
  ports: [{name: http, port: 8080}]
`
	file := filepath.Join(t.TempDir(), "dns-web.yaml")
	if err := os.WriteFile(file, []byte(web), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kc("apply", "-f", file); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	// The headless Service's name is its pod's address. (Not wget's -T:
	// Debian's static busybox 1.35 wget crashes with it.)
	var podIP, last string
	poll(t, ctx, exited, "dns-web to run with an IP", func() bool {
		out, err := kc("get", "pod", "dns-web", "-o", "jsonpath={.status.phase} {.status.podIP}")
		f := strings.Fields(out)
		if err == nil && len(f) == 2 && f[0] == "Running" {
			podIP = f[1]
		}
		return podIP != ""
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		last, _ = kc("exec", "api-sleeper", "--", "nslookup", "-type=a", "dns-web.default.svc.cluster.local.")
		if strings.Contains(last, "Address: "+podIP+"\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(last, "Name:\tdns-web.default.svc.cluster.local\nAddress: "+podIP+"\n") {
		t.Errorf("nslookup of the headless Service dns-web, want its pod's %s:\n%s", podIP, last)
	} else if out, _ := kc("exec", "api-sleeper", "--", "timeout", "10", "wget", "-q", "-O-", "http://dns-web:8080/"); strings.TrimSpace(out) != "hello by name" {
		t.Errorf("wget http://dns-web:8080/ (the search path, then dns-web's address %s) = %q", podIP, out)
	}
	srv, _ := kc("exec", "api-sleeper", "--", "nslookup", "-type=srv", "_http._tcp.dns-web.default.svc.cluster.local.")
	if want := "8080 " + strings.ReplaceAll(podIP, ".", "-") + ".dns-web.default.svc.cluster.local"; !strings.Contains(srv, want) {
		t.Errorf("nslookup -type=srv of dns-web's http port lacks %q:\n%s", want, srv)
	}
	if out, err := kc("delete", "-f", file, "--wait=true"); err != nil {
		t.Errorf("kubectl delete: %v\n%s", err, out)
	}
}

// checkBerthKubectl drives the running cluster with `berth kubectl`, the
// kubectl built into berth, given no kubeconfig: BERTH_DATA_DIR leads it to
// the cluster's admin kubeconfig. Pod api-echo is running.
func checkBerthKubectl(t *testing.T, ctx context.Context, berth, dataDir, nodeName string) {
	t.Helper()
	env := []string{"BERTH_DATA_DIR=" + dataDir}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "BERTH_DATA_DIR=") {
			env = append(env, kv)
		}
	}
	bk := func(stdin string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, berth, append([]string{"kubectl"}, args...)...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("berth kubectl %v: %v", args, err)
		}
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}
	mustBK := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := bk(stdin, args...)
		if code != 0 {
			t.Fatalf("berth kubectl %s exited %d:\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}

	if got, want := strings.TrimSpace(mustBK("", "get", "nodes", "-o", "name")), "node/"+nodeName; got != want {
		t.Errorf("berth kubectl get nodes -o name = %q, want %q", got, want)
	}
	v := mustBK("", "version")
	release, err := harness.ModuleRelease("k8s.io/api")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Client Version: " + release, "Server Version: " + release} {
		if !strings.Contains(v, want) {
			t.Errorf("berth kubectl version printed:\n%s\nwant a line with %q", v, want)
		}
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: berth-kubectl, namespace: default}\ndata: {answer: \"42\"}\n"
	if out := mustBK(cm, "apply", "-f", "-"); strings.TrimSpace(out) != "configmap/berth-kubectl created" {
		t.Errorf("berth kubectl apply -f - printed %q, want configmap/berth-kubectl created", out)
	}
	if out := mustBK("", "get", "configmap", "berth-kubectl", "-o", "jsonpath={.data.answer}"); out != "42" {
		t.Errorf("the applied ConfigMap's answer is %q, want 42", out)
	}
	if out := mustBK("", "logs", "api-echo"); strings.TrimSpace(out) != "hello from berth up" {
		t.Errorf("berth kubectl logs api-echo = %q", out)
	}
	// kubectl's exit codes: a command's own (exec), 1 for an API error.
	if out := mustBK("through stdin\n", "exec", "-i", "api-echo", "--", "cat"); out != "through stdin\n" {
		t.Errorf("berth kubectl exec -i api-echo -- cat echoed %q, want its stdin", out)
	}
	if _, errOut, code := bk("", "exec", "api-echo", "--", "sh", "-c", "exit 3"); code != 3 {
		t.Errorf("berth kubectl exec api-echo -- sh -c 'exit 3' exited %d, want 3; stderr:\n%s", code, errOut)
	}
	if _, errOut, code := bk("", "get", "pod", "no-such-pod"); code != 1 || !strings.Contains(errOut, "NotFound") {
		t.Errorf("berth kubectl get pod no-such-pod exited %d with stderr %q, want 1 and NotFound", code, errOut)
	}
	mustBK("", "delete", "configmap", "berth-kubectl")
}

// shortTempDir is a new directory with a short path, removed at cleanup
// unless something is still mounted under it:
// the unix sockets a cluster makes under its data dir (containerd's, the
// CSI registration's) must fit in 107 bytes, which t.TempDir's long names
// can break.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bup")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if mounts := mountsUnder(t, dir); len(mounts) > 0 {
			t.Errorf("not removing %s: still mounted under it: %v", dir, mounts)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// poll checks cond every 100 ms until it holds; berth up exiting or ctx
// ending first fails the test.
func poll(t *testing.T, ctx context.Context, exited <-chan struct{}, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-exited:
			t.Fatalf("berth up exited while waiting for %s", what)
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// processesMentioning lists the PIDs whose command line contains s.
func processesMentioning(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
