package stats

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"berth/cri"
	"berth/integration/harness"
	"berth/integration/nodeenv"
	"berth/internal/syncbuf"
)

// staticPod is a host-network sleeper (no CNI needed, the same on both
// sides), numbered.
const staticPod = `apiVersion: v1
kind: Pod
metadata: {name: sleeper-%[2]d, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: sleep
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
`

// kubeletBinary is $KUBELET_BIN or the conformance cache's kubelet
// (hack/conformance/build.sh kubelet).
func kubeletBinary(b *testing.B) string {
	bin := os.Getenv("KUBELET_BIN")
	if bin == "" {
		bin = "/var/cache/berth/conformance/bin/kubelet"
	}
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("no kubelet binary (set KUBELET_BIN or run hack/conformance/build.sh kubelet): %v", err)
	}
	return bin
}

// statsCost is one side's figures.
type statsCost struct {
	cpuPct, rssMiB                    float64
	cadvisorP50, cadvisorMax, summary time.Duration
	cadvisorKiB                       float64
}

// measure waits for n running containers on the runtime, lets the node
// settle, then measures pid's CPU over window, its RSS, and the scrape
// latencies through get.
func measure(b *testing.B, ctx context.Context, rt *cri.Client, pid, n int, window time.Duration, get func(string) (time.Duration, time.Duration, int)) statsCost {
	harness.WaitFor(b, 4*time.Minute, fmt.Sprintf("%d sleepers running", n), func() (bool, string) {
		list, err := rt.ListContainers(ctx, nil)
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, c := range list {
			if c.GetState().String() == "CONTAINER_RUNNING" && strings.HasPrefix(c.GetLabels()["io.kubernetes.pod.name"], "sleeper-") {
				running++
			}
		}
		return running == n, fmt.Sprint(running)
	})
	time.Sleep(20 * time.Second) // settle: starts done, two samples with every pod
	cpu0 := harness.CPUTime(b, pid)
	time.Sleep(window)
	cpu := harness.CPUTime(b, pid) - cpu0
	out := statsCost{cpuPct: 100 * cpu.Seconds() / window.Seconds(), rssMiB: float64(harness.RSS(b, pid)) / (1 << 20)}
	var size int
	out.cadvisorP50, out.cadvisorMax, size = get("/metrics/cadvisor")
	out.cadvisorKiB = float64(size) / 1024
	out.summary, _, _ = get("/stats/summary")
	return out
}

// waitNoSleepers waits until the runtime runs no sleeper.
func waitNoSleepers(b *testing.B, ctx context.Context, rt *cri.Client) {
	harness.WaitFor(b, 3*time.Minute, "the sleepers gone", func() (bool, string) {
		list, err := rt.ListPodSandbox(ctx, nil)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, s := range list {
			if strings.HasPrefix(s.GetMetadata().GetName(), "sleeper-") {
				n++
			}
		}
		return n == 0, fmt.Sprint(n)
	})
}

// BenchmarkStatsVsKubelet runs 30 host-network static pods under upstream's
// kubelet v1.34 (standalone) and then under berth's agent (joined, the same
// manifests), on the same containerd, both at the default 10 s
// housekeeping interval, and prints each one's CPU over a minute (share of
// one core, the whole process: sampling plus everything else a node agent
// does with 30 idle pods), RSS, and the latency of /metrics/cadvisor and
// /stats/summary (20 requests on one connection), with berth/kubelet
// ratios.
func BenchmarkStatsVsKubelet(b *testing.B) {
	const pods, window = 30, time.Minute
	kubelet := kubeletBinary(b)
	env := nodeenv.Current()
	ctx := context.Background()
	rt, err := cri.New(ctx, cri.Config{Endpoint: env.Endpoint})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	manifests := func(dir string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range pods {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("sleeper-%d.yaml", i)), []byte(fmt.Sprintf(staticPod, env.BusyboxImage, i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	clear := func(dir string) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
		waitNoSleepers(b, ctx, rt)
	}

	// Upstream's kubelet, standalone: anonymous access on loopback for the
	// scrapes (no apiserver to review tokens).
	dir := b.TempDir()
	kdir, kmanifests := filepath.Join(dir, "kubelet"), filepath.Join(dir, "kubelet-manifests")
	manifests(kmanifests)
	cgroupRoot := "/berth-bench-kubelet"
	makeCgroup(b, cgroupRoot)
	port, healthz := harness.FreePort(b), harness.FreePort(b)
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: %s
staticPodPath: %s
cgroupDriver: cgroupfs
cgroupRoot: %s
failSwapOn: false
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
podLogsDir: %s
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi}
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
`, env.Endpoint, kmanifests, cgroupRoot, port, healthz, filepath.Join(kdir, "logs"))
	if err := os.MkdirAll(kdir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kdir, "config.yaml"), []byte(config), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(kubelet, "--config", filepath.Join(kdir, "config.yaml"), "--root-dir", filepath.Join(kdir, "root"),
		"--cert-dir", filepath.Join(kdir, "pki"), "--hostname-override", "bench-kubelet", "--v", "0")
	klog := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = klog, klog
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stopKubelet := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		unmountUnder(b, kdir) // the kubelet bind-mounts its root dir onto itself
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	k := measure(b, ctx, rt, cmd.Process.Pid, pods, window, scrape(b, insecure, port))
	clear(kmanifests)
	stopKubelet()
	if b.Failed() {
		b.Logf("kubelet log:\n%s", klog.String())
	}
	removeCgroup(cgroupRoot)

	// berth's agent, joined, with the same manifests.
	c := harness.StartCluster(b, harness.ClusterOptions{})
	b.Cleanup(func() { clear(c.Manifests) })
	manifests(c.Manifests)
	client, err := latencyClient(c.Config)
	if err != nil {
		b.Fatal(err)
	}
	a := measure(b, ctx, rt, c.Agent.Pid(), pods, window, scrape(b, client, c.KubeletPort))

	ratio := func(x, y float64) string { return fmt.Sprintf("%.2f", x/y) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	fmt.Printf("\n%d host-network pods, housekeeping 10 s, CPU over %s (share of one core), same containerd\n\n", pods, window)
	fmt.Println("| | kubelet v1.34 | berth agent | berth / kubelet |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| CPU | %.2f %% | %.2f %% | %s |\n", k.cpuPct, a.cpuPct, ratio(a.cpuPct, k.cpuPct))
	fmt.Printf("| RSS | %.1f MiB | %.1f MiB | %s |\n", k.rssMiB, a.rssMiB, ratio(a.rssMiB, k.rssMiB))
	fmt.Printf("| /metrics/cadvisor p50 | %s | %s | %s |\n", ms(k.cadvisorP50), ms(a.cadvisorP50), ratio(float64(a.cadvisorP50), float64(k.cadvisorP50)))
	fmt.Printf("| /metrics/cadvisor max | %s | %s | %s |\n", ms(k.cadvisorMax), ms(a.cadvisorMax), ratio(float64(a.cadvisorMax), float64(k.cadvisorMax)))
	fmt.Printf("| /metrics/cadvisor size | %.0f KiB | %.0f KiB | %s |\n", k.cadvisorKiB, a.cadvisorKiB, ratio(a.cadvisorKiB, k.cadvisorKiB))
	fmt.Printf("| /stats/summary p50 | %s | %s | %s |\n", ms(k.summary), ms(a.summary), ratio(float64(a.summary), float64(k.summary)))
	b.ReportMetric(a.cpuPct/k.cpuPct, "cpu-ratio")
}

// scrape fetches a path on 127.0.0.1:port 21 times on one connection and
// returns the median and slowest of the last 20, and the size.
func scrape(b *testing.B, client *http.Client, port int) func(string) (time.Duration, time.Duration, int) {
	return func(path string) (time.Duration, time.Duration, int) {
		var ds []time.Duration
		size := 0
		for range 21 {
			start := time.Now()
			resp, err := client.Get("https://127.0.0.1:" + strconv.Itoa(port) + path)
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("GET %s: %s", path, resp.Status)
			}
			ds = append(ds, time.Since(start))
			size = int(n)
		}
		ds = ds[1:] // the first pays the TLS handshake
		slices.Sort(ds)
		return ds[len(ds)/2], ds[len(ds)-1], size
	}
}

// cgroupHierarchies are the mounted v1 hierarchies (and the v2 one).
func cgroupHierarchies() []string {
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range entries {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// makeCgroup creates root in every hierarchy (the kubelet wants its
// cgroupRoot to exist).
func makeCgroup(b *testing.B, root string) {
	for _, h := range cgroupHierarchies() {
		if err := os.MkdirAll(filepath.Join(h, root), 0o755); err != nil && !os.IsExist(err) {
			b.Logf("cgroup %s: %v", filepath.Join(h, root), err)
		}
	}
}

// removeCgroup removes root and what the kubelet made under it, deepest
// first, in every hierarchy.
func removeCgroup(root string) {
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
	}
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(b *testing.B, dir string) {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		b.Error(err)
		return
	}
	var mounts []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && (f[1] == dir || strings.HasPrefix(f[1], dir+"/")) {
			mounts = append(mounts, f[1])
		}
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil {
			b.Errorf("unmounting %s: %v", mounts[i], err)
		}
	}
}
