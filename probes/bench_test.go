package probes

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// benchContainers is how many probed containers the benchmark runs.
const benchContainers = 1000

// cpuSeconds is the process's user+system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// benchRow is one line of the printed table.
type benchRow struct {
	name        string
	probes      int
	wall, cpu   float64 // seconds
	baselineCPU float64 // CPU seconds per probe of the same action called directly
	baseRate    float64 // probes per second of the same action called directly
}

var (
	benchMu   sync.Mutex
	benchRows = map[string]benchRow{}
)

// BenchmarkProbes measures 1000 probed containers, each with a liveness
// probe every second, run by a Manager on the real clock: probes per second
// and process CPU per probe, against a baseline of the same action called
// directly in a loop (no scheduler, results, metrics or events), measured in
// the same run. It prints a table. Run it with
//
//	go test -run XXX -bench Probes -benchtime 5000x ./probes/
func BenchmarkProbes(b *testing.B) {
	b.Run("httpGet", func(b *testing.B) {
		var hits atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits.Add(1)
			w.WriteHeader(http.StatusOK)
		}))
		defer srv.Close()
		host, port := hostPort(b, srv.URL)
		probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(int32(port))}}, PeriodSeconds: 1, TimeoutSeconds: 1}
		g := NewHTTPGetter()
		base := baseline(b, func() {
			req, _ := NewHTTPRequest(probe.HTTPGet, nil, host, PurposeProbe)
			if res, out, err := g.Probe(context.Background(), req, time.Second); res != Success {
				b.Fatalf("baseline probe: %s %s %v", res, out, err)
			}
		})
		_, client := newCRI(b)
		ids := make([]string, benchContainers)
		for i := range ids {
			ids[i] = fmt.Sprintf("containerd://c%d", i)
		}
		runManagerBench(b, "httpGet", Config{Exec: client, HTTP: g}, probe, host, ids, hits.Load, base)
	})
	b.Run("exec", func(b *testing.B) {
		srv, client := newCRI(b)
		var calls atomic.Int64
		srv.SetExecHandler(func(context.Context, string, []string) ([]byte, []byte, int32, error) {
			calls.Add(1)
			return []byte("ok"), nil, 0, nil
		})
		raw := startContainers(b, client, benchContainers)
		probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}}, PeriodSeconds: 1, TimeoutSeconds: 1}
		base := baseline(b, func() {
			if res, out, err := ExecProbe(context.Background(), client, raw[0], probe.Exec.Command, time.Second); res != Success {
				b.Fatalf("baseline probe: %s %s %v", res, out, err)
			}
		})
		ids := make([]string, len(raw))
		for i, id := range raw {
			ids[i] = "containerd://" + id
		}
		runManagerBench(b, "exec", Config{Exec: client}, probe, "127.0.0.1", ids, calls.Load, base)
	})
	printBenchTable()
}

// baseRun is the baseline's figures.
type baseRun struct{ cpuPerCall, rate float64 }

// baseline runs the action 2000 times directly, 8 at a time, and returns its
// CPU seconds per call and calls per second.
func baseline(b *testing.B, action func()) baseRun {
	const n, par = 2000, 8
	var next atomic.Int64
	var wg sync.WaitGroup
	start, wall := cpuSeconds(), time.Now()
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= n {
				action()
			}
		}()
	}
	wg.Wait()
	return baseRun{cpuPerCall: (cpuSeconds() - start) / n, rate: n / time.Since(wall).Seconds()}
}

// runManagerBench runs a Manager probing len(ids) containers until b.N
// probes have been made (count reports them).
func runManagerBench(b *testing.B, name string, cfg Config, probe *v1.Probe, podIP string, ids []string, count func() int64, base baseRun) {
	m, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	started := metav1.NewTime(time.Now().Add(-time.Minute))
	for i, id := range ids {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "bench", UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", LivenessProbe: probe}}},
		}
		m.AddPod(pod)
		m.UpdatePodStatus(pod, &v1.PodStatus{Phase: v1.PodRunning, PodIP: podIP, ContainerStatuses: []v1.ContainerStatus{{
			Name: "app", ContainerID: id, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}},
		}}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-m.Updates():
			case <-ctx.Done():
				return
			}
		}
	}()
	first := count()
	b.ResetTimer()
	cpu0, wall0 := cpuSeconds(), time.Now()
	runDone := make(chan error, 1)
	go func() { runDone <- m.Run(ctx) }()
	for count()-first < int64(b.N) {
		time.Sleep(5 * time.Millisecond)
	}
	probes := int(count() - first)
	wall, cpu := time.Since(wall0).Seconds(), cpuSeconds()-cpu0
	b.StopTimer()
	cancel()
	<-runDone
	<-done
	b.ReportMetric(float64(probes)/wall, "probes/s")
	b.ReportMetric(cpu/float64(probes)*1e6, "cpu-µs/probe")
	benchMu.Lock()
	benchRows[name] = benchRow{name: name, probes: probes, wall: wall, cpu: cpu, baselineCPU: base.cpuPerCall, baseRate: base.rate}
	benchMu.Unlock()
}

func printBenchTable() {
	benchMu.Lock()
	defer benchMu.Unlock()
	if len(benchRows) == 0 {
		return
	}
	names := make([]string, 0, len(benchRows))
	for n := range benchRows {
		names = append(names, n)
	}
	sort.Strings(names)
	w := os.Stdout
	fmt.Fprintf(w, "\n%d probed containers, one liveness probe each, periodSeconds 1\n", benchContainers)
	fmt.Fprintf(w, "%-8s %8s %8s %10s %10s %12s %14s %10s %12s\n", "action", "probes", "wall s", "probes/s", "CPU s", "CPU µs/probe", "base µs/probe", "CPU ratio", "base max/s")
	for _, n := range names {
		r := benchRows[n]
		per := r.cpu / float64(r.probes)
		fmt.Fprintf(w, "%-8s %8d %8.2f %10.0f %10.3f %12.1f %14.1f %10.2f %12.0f\n",
			r.name, r.probes, r.wall, float64(r.probes)/r.wall, r.cpu, per*1e6, r.baselineCPU*1e6, per/r.baselineCPU, r.baseRate)
	}
	fmt.Fprintf(w, "(CPU: process user+system via getrusage, test servers included; base: the same action called directly, 8 at a time, no scheduler/results/metrics; base max/s: its throughput)\n\n")
}

// BenchmarkIdleWorkers measures what 1000 pods × 3 probes (periodSeconds 1)
// cost while their containers do not exist yet: each worker wakes every
// period and finds nothing to probe. It reports CPU milliseconds per second.
func BenchmarkIdleWorkers(b *testing.B) {
	_, client := newCRI(b)
	m, err := New(Config{Exec: client})
	if err != nil {
		b.Fatal(err)
	}
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(1)}}, PeriodSeconds: 1}
	for i := range benchContainers {
		m.AddPod(&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "bench", UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", LivenessProbe: p, ReadinessProbe: p, StartupProbe: p}}},
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- m.Run(ctx) }()
	time.Sleep(1500 * time.Millisecond) // past the jittered first runs
	b.ResetTimer()
	cpu0, wall0 := cpuSeconds(), time.Now()
	time.Sleep(time.Duration(b.N) * time.Second)
	cpu, wall := cpuSeconds()-cpu0, time.Since(wall0).Seconds()
	b.StopTimer()
	cancel()
	<-runDone
	b.ReportMetric(cpu/wall*1e3, "cpu-ms/s")
	fmt.Printf("\n%d idle probe workers (periodSeconds 1, no container yet): %.1f ms CPU per second (%.2f%% of a core)\n\n",
		3*benchContainers, cpu/wall*1e3, cpu/wall*100)
}
