package stats

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/cri/critest"
)

// benchProvider is a provider over a fake runtime with pods pods of two
// containers each, their cgroups (v1), logs and an emptyDir each.
func benchProvider(b *testing.B, pods int) *Provider {
	b.Helper()
	srv := critest.NewServer(b)
	srv.AddImage("busybox")
	ctx := context.Background()
	c, err := cri.New(ctx, cri.Config{Endpoint: srv.Endpoint()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := c.PullImage(ctx, "busybox", nil, nil); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	cgroupRoot, procRoot, root, logDir := filepath.Join(dir, "cgroup"), filepath.Join(dir, "proc"), filepath.Join(dir, "root"), filepath.Join(dir, "logs")
	files := v1Cgroup("", 50e9, 8<<30, 1<<30, 3<<30, 1000, 0)
	for i := range pods {
		uid, name := fmt.Sprintf("uid-%d", i), fmt.Sprintf("pod-%d", i)
		sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: uid},
			Labels: map[string]string{cri.LabelPodUID: uid, cri.LabelPodName: name, cri.LabelPodNamespace: "ns"}}
		sb, err := c.RunPodSandbox(ctx, sbCfg, "")
		if err != nil {
			b.Fatal(err)
		}
		podCgroup := "/kubepods/besteffort/pod" + uid
		for k, v := range v1Cgroup(podCgroup, 2e9, 300<<20, 100<<20, 150<<20, 60, 3) {
			files[k] = v
		}
		for k, v := range v1Cgroup(podCgroup+"/"+sb, 1e6, 1<<20, 0, 1<<20, 1, 1) {
			files[k] = v
		}
		for _, ctr := range []string{"app", "sidecar"} {
			id, err := c.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: ctr}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
				Labels: map[string]string{cri.LabelPodUID: uid, cri.LabelPodName: name, cri.LabelPodNamespace: "ns", cri.LabelContainerName: ctr},
			}, sbCfg)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.StartContainer(ctx, id); err != nil {
				b.Fatal(err)
			}
			for k, v := range v1Cgroup(podCgroup+"/"+id, 1.5e9, 200<<20, 50<<20, 120<<20, 40, 2) {
				files[k] = v
			}
			files[filepath.Join("..", "logs", "ns_"+name+"_"+uid, ctr, "0.log")] = "a log line\n"
		}
		files[filepath.Join("..", "root", "pods", uid, "volumes", "kubernetes.io~empty-dir", "data", "f")] = "data"
	}
	fakeTree(b, cgroupRoot, files)
	fakeTree(b, procRoot, map[string]string{
		"meminfo": "MemTotal:       16384000 kB\nMemFree:         1000 kB\n", "stat": "btime 1699990000\n",
		"sys/kernel/pid_max": "4194304\n", "self/net/dev": "h1\nh2\n  eth0: 5000 50 1 2 0 0 0 0 7000 70 3 4 0 0 0 0\n",
		"4242/net/dev": "h1\nh2\n  eth0: 1234 12 0 0 0 0 0 0 4321 21 0 0 0 0 0 0\n",
	})
	cg := Cgroups{Root: cgroupRoot}
	p, err := New(Config{Runtime: c, NodeName: "bench", RootDir: root, PodLogDir: logDir, Cgroups: &cg, ProcRoot: procRoot,
		MountInfo: filepath.Join(dir, "none")})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkRefresh is one housekeeping sample (CRI calls to an in-process
// fake, cgroup and /proc reads, log and volume walks).
func BenchmarkRefresh(b *testing.B) {
	for _, pods := range []int{30, 100} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			p := benchProvider(b, pods)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Refresh(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCadvisorScrape is one GET /metrics/cadvisor of a sample.
func BenchmarkCadvisorScrape(b *testing.B) {
	for _, pods := range []int{30, 100} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			p := benchProvider(b, pods)
			if err := p.Refresh(context.Background()); err != nil {
				b.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(NewCadvisorCollector(p))
			h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
			var size int
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/cadvisor", nil))
				n, _ := io.Copy(io.Discard, rec.Body)
				size = int(n)
			}
			b.ReportMetric(float64(size), "bytes/scrape")
		})
	}
}
