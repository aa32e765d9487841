package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"berth/agent/proxy"
	"berth/integration/harness"
	"berth/internal/prereq"
)

// kubeProxyEnv names upstream's kube-proxy binary for the baseline; unset,
// $CONFORMANCE_CACHE/bin/kube-proxy (hack/conformance/build.sh proxy).
const kubeProxyEnv = "BERTH_KUBE_PROXY"

// benchTable is the berth proxier's table in the benchmark's namespaces.
const benchTable = "berth-proxy-bench"

// BenchmarkSync measures the service proxy against upstream kube-proxy in
// nftables mode, both as processes watching the same `berth server`, each
// in a network namespace of its own, at 100, 1000 and 5000 Services of 10
// endpoints: the full sync (its own sync-duration figure, after the
// informers' lists), the time from an EndpointSlice update to the new
// endpoint in the kernel (as the benchmark sees it: the update's return
// to the proxy's sync-complete log line, the endpoint then found in the
// table: kube-proxy's endpoint chain, berth's endpoint map element), and the proxy's resident memory after both. It prints a
// table with the ratios; without a kube-proxy binary (hack/conformance/
// build.sh proxy builds it) the kube-proxy columns say so.
func BenchmarkSync(b *testing.B) {
	if os.Geteuid() != 0 {
		prereq.Missing(b, "needs root for network namespaces and nftables")
	}
	for _, bin := range []string{"unshare", "nsenter", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			prereq.Missing(b, "%s not found (hack/deps.sh installs it)", bin)
		}
	}
	kubeProxy := os.Getenv(kubeProxyEnv)
	if kubeProxy == "" {
		cache := os.Getenv("CONFORMANCE_CACHE")
		if cache == "" {
			cache = "/var/cache/berth/conformance"
		}
		kubeProxy = filepath.Join(cache, "bin", "kube-proxy")
	}
	if _, err := os.Stat(kubeProxy); err != nil {
		b.Logf("no kube-proxy baseline: %v (hack/conformance/build.sh proxy builds it)", err)
		kubeProxy = ""
	}
	srv, err := harness.LaunchServer(b.TempDir(), "--listen", "127.0.0.1:0", "--service-cluster-ip-range", "10.160.0.0/16")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	client := srv.Client(b)
	ctx := context.Background()

	type row struct {
		n         int
		berth, kp result
		kpErr     error
	}
	var rows []row
	created := 0
	for _, n := range []int{100, 1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			if err := createServices(ctx, client, created, n); err != nil {
				b.Fatal(err)
			}
			created = n
			for i := range b.N {
				r := row{n: n}
				if r.berth, err = measure(ctx, client, n, fmt.Sprintf("10.201.%d.%d", i/250, i%250+1), berthProxier(srv.Kubeconfig()), benchTable); err != nil {
					b.Fatalf("berth: %v", err)
				}
				if kubeProxy != "" {
					r.kp, r.kpErr = measure(ctx, client, n, fmt.Sprintf("10.202.%d.%d", i/250, i%250+1), upstreamProxy(kubeProxy, srv.Kubeconfig()), "kube-proxy")
				} else {
					r.kpErr = fmt.Errorf("not built")
				}
				rows = append(rows, r)
			}
		})
	}
	fmt.Println("\nservice proxy sync, Services × 10 endpoints (full: the proxy's own sync time; change: EndpointSlice update to the chain in the kernel; RSS after both)")
	fmt.Printf("%8s %12s %12s %10s %12s %12s %10s %8s %8s %8s\n", "services", "berth full", "berth change", "berth RSS", "kp full", "kp change", "kp RSS", "full ×", "change ×", "RSS ×")
	for _, r := range rows {
		if r.kpErr != nil {
			fmt.Printf("%8d %12v %12v %9dM   kube-proxy: %v\n", r.n, r.berth.full, r.berth.change, r.berth.rssMB, r.kpErr)
			continue
		}
		fmt.Printf("%8d %12v %12v %9dM %12v %12v %9dM %8.2f %8.2f %8.2f\n", r.n, r.berth.full, r.berth.change, r.berth.rssMB,
			r.kp.full, r.kp.change, r.kp.rssMB,
			r.berth.full.Seconds()/r.kp.full.Seconds(), r.berth.change.Seconds()/r.kp.change.Seconds(), float64(r.berth.rssMB)/float64(r.kp.rssMB))
	}
}

// createServices creates the Services from (without selectors: the slices
// are the benchmark's) up to n, each with a slice of 10 ready endpoints.
func createServices(ctx context.Context, client kubernetes.Interface, from, n int) error {
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := createService(ctx, client, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := from; i < n; i++ {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func createService(ctx context.Context, client kubernetes.Interface, i int) error {
	name := fmt.Sprintf("svc-%d", i)
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: v1.ServiceSpec{
		Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}},
	}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-1", Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "berth-proxy-bench"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(v1.ProtocolTCP), Port: ptr.To[int32](8080)}},
	}
	for j := range 10 {
		k := i*10 + j
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 100+k>>16, k>>8&255, k&255)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	_, err := client.DiscoveryV1().EndpointSlices("default").Create(ctx, s, metav1.CreateOptions{})
	return err
}

// result is one proxy's figures at one size.
type result struct {
	full, change time.Duration
	rssMB        int64
}

// syncEvent is a sync-complete line of a proxy's log.
type syncEvent struct {
	took time.Duration
	at   time.Time
}

// proxyCmd is a proxy's command line and how to read its log.
type proxyCmd struct {
	argv []string
	// parse returns the sync duration of a sync-complete line.
	parse func(line string) (time.Duration, bool)
}

// measure runs the proxy until its first sync of n services completes,
// updates one endpoint of the middle service to ip, waits for the next
// sync, checks its chain in table, and stops it. The proxy runs in the
// host's network namespace, to reach the server on 127.0.0.1, but its nft
// and iptables commands act on a namespace of their own (netnsTools).
func measure(ctx context.Context, client kubernetes.Interface, n int, ip string, pc proxyCmd, table string) (result, error) {
	var res result
	ns, err := newNetnsTools()
	if err != nil {
		return res, err
	}
	defer ns.close()
	cmd := exec.Command(pc.argv[0], pc.argv[1:]...)
	cmd.Env = append(os.Environ(), "PATH="+ns.dir+":"+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return res, err
	}
	var log strings.Builder
	var logMu sync.Mutex
	syncs := make(chan syncEvent, 100)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			logMu.Lock()
			if log.Len() < 1<<20 {
				log.WriteString(sc.Text() + "\n")
			}
			logMu.Unlock()
			if d, ok := pc.parse(sc.Text()); ok {
				syncs <- syncEvent{took: d, at: time.Now()}
			}
		}
		close(syncs)
	}()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	fail := func(format string, args ...any) (result, error) {
		logMu.Lock()
		defer logMu.Unlock()
		tail := log.String()
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return res, fmt.Errorf(format+"; log tail:\n%s", append(args, tail)...)
	}
	// The first sync with every service: a proxy may sync before its
	// informers have them all.
	for {
		ev, ok := waitSync(syncs, 5*time.Minute)
		if !ok {
			return fail("no first sync")
		}
		res.full = ev.took
		out, err := ns.nft("list", "map", "ip", table, "service-ips")
		if err != nil {
			return fail("%v", err)
		}
		if strings.Count(out, " : goto ") >= n {
			break
		}
	}
	// Drain what synced meanwhile, then change one endpoint.
	for len(syncs) > 0 {
		<-syncs
	}
	name := fmt.Sprintf("svc-%d", n/2)
	sl, err := client.DiscoveryV1().EndpointSlices("default").Get(ctx, name+"-1", metav1.GetOptions{})
	if err != nil {
		return res, err
	}
	sl.Endpoints[0].Addresses = []string{ip}
	start := time.Now()
	if _, err := client.DiscoveryV1().EndpointSlices("default").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		return res, err
	}
	for {
		ev, ok := waitSync(syncs, 2*time.Minute)
		if !ok {
			return fail("no sync after the endpoint change")
		}
		out, err := ns.nft("list", "table", "ip", table)
		if err != nil {
			return fail("%v", err)
		}
		// kube-proxy: the endpoint's chain; berth: the element of the
		// service's endpoint map.
		if strings.Contains(out, "__"+ip+"/8080") || strings.Contains(out, ip+" . 8080") {
			res.change = ev.at.Sub(start)
			break
		}
	}
	res.rssMB = rssMB(cmd.Process.Pid)
	res.full, res.change = res.full.Round(time.Millisecond), res.change.Round(time.Millisecond)
	return res, nil
}

// netnsTools is a network namespace held by a sleeping process, and a
// directory of nft and iptables wrappers acting on it, to put first on a
// proxy's PATH.
type netnsTools struct {
	holder *exec.Cmd
	dir    string
	nftBin string
}

func newNetnsTools() (*netnsTools, error) {
	holder := exec.Command("unshare", "--net", "--", "sleep", "infinity")
	holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := holder.Start(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "berth-proxy-bench-")
	if err != nil {
		_ = holder.Process.Kill()
		_ = holder.Wait()
		return nil, err
	}
	ns := &netnsTools{holder: holder, dir: dir}
	for _, tool := range []string{"nft", "iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			continue // a proxy that needs it fails, naming it
		}
		if tool == "nft" {
			ns.nftBin = path
		}
		script := fmt.Sprintf("#!/bin/sh\nexec nsenter --net=/proc/%d/ns/net -- %s \"$@\"\n", holder.Process.Pid, path)
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
			ns.close()
			return nil, err
		}
	}
	return ns, nil
}

// nft runs nft in the namespace.
func (ns *netnsTools) nft(args ...string) (string, error) {
	out, err := exec.Command("nsenter", append([]string{"--net=/proc/" + strconv.Itoa(ns.holder.Process.Pid) + "/ns/net", "--", ns.nftBin}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("nft %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// close ends the namespace (and every rule in it) and removes the wrappers.
func (ns *netnsTools) close() {
	_ = ns.holder.Process.Kill()
	_ = ns.holder.Wait()
	os.RemoveAll(ns.dir)
}

func waitSync(syncs <-chan syncEvent, timeout time.Duration) (syncEvent, bool) {
	select {
	case ev, ok := <-syncs:
		return ev, ok
	case <-time.After(timeout):
		return syncEvent{}, false
	}
}

// rssMB is pid's resident set in MiB.
func rssMB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb / 1024
		}
	}
	return -1
}

// berthProxier runs this test binary as the berth proxier (runProxier).
func berthProxier(kubeconfig string) proxyCmd {
	took := regexp.MustCompile(`msg="synced the service proxy rules".* took=(\S+)`)
	return proxyCmd{
		argv: []string{"env", modeEnv + "=proxier", targetEnv + "=" + kubeconfig, os.Args[0]},
		parse: func(line string) (time.Duration, bool) {
			m := took.FindStringSubmatch(line)
			if m == nil {
				return 0, false
			}
			d, err := time.ParseDuration(m[1])
			return d, err == nil
		},
	}
}

// upstreamProxy runs kube-proxy in nftables mode with its defaults (sync
// period 30 s, min sync period 1 s) but for the conntrack settings (of the
// host's namespace: left alone) and its servers' ports.
func upstreamProxy(bin, kubeconfig string) proxyCmd {
	took := regexp.MustCompile(`"SyncProxyRules complete" ipFamily="IPv4" elapsed="([^"]+)"`)
	return proxyCmd{
		argv: []string{bin, "--proxy-mode=nftables", "--kubeconfig=" + kubeconfig, "--hostname-override=bench-node",
			"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
			"--metrics-bind-address=" + freeAddr(), "--healthz-bind-address=" + freeAddr(), "--v=2"},
		parse: func(line string) (time.Duration, bool) {
			m := took.FindStringSubmatch(line)
			if m == nil {
				return 0, false
			}
			d, err := time.ParseDuration(m[1])
			return d, err == nil
		},
	}
}

// freeAddr is a free port on 127.0.0.1.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer l.Close()
	return l.Addr().String()
}

// runProxier is the berth side of the benchmark: the agent's proxier on
// the kubeconfig in targetEnv until SIGTERM; its debug log (one line per
// sync) on stdout.
func runProxier() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(targetEnv))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	p, err := proxy.New(proxy.Config{Client: client, Table: benchTable,
		Logger: slog.New(slog.NewTextHandler(io.Writer(os.Stdout), &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		return err
	}
	return p.Run(ctx)
}
