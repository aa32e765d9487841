package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/integration/harness"
)

// BenchmarkStartup writes N static pod manifests at once into a running
// agent's directory and measures, per pod, the time from its manifest being
// written to its container running (the runtime's startedAt, read through
// CRI), the agent's RSS (all, and its anonymous part: the rest is the pages
// of the one berth binary), its CPU time during the start, and its share of
// a core over 10 s once the pods run. The baseline, in the same run on the
// same containerd, is the same pods started by calling CRI directly, all at
// once (directRound); the ratios are the agent's figure over the
// baseline's. Run it with
//
//	go test -run '^$' -bench Startup -benchtime 1x ./integration/agent/
//
// It prints one table row per N. BERTH_BENCH_AGENT_ARGS adds agent flags
// (e.g. "--max-parallel-pod-starts 8") to compare settings.
func BenchmarkStartup(b *testing.B) {
	for _, n := range []int{10, 30, 100} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			for range b.N {
				r := startupRound(b, n)
				b.ReportMetric(r.p50.Seconds(), "p50-s")
				b.ReportMetric(r.p99.Seconds(), "p99-s")
				b.ReportMetric(r.max.Seconds(), "max-s")
				b.ReportMetric(r.directP50.Seconds(), "direct-p50-s")
				b.ReportMetric(float64(r.rssAfter)/(1<<20), "rss-MiB")
				b.ReportMetric(r.cpu.Seconds(), "cpu-s")
				b.ReportMetric(r.steadyPct, "steady-%cpu")
				b.Logf("\n%-6s %8s %8s %8s %10s %10s %9s %9s %10s %10s %10s %10s %8s %8s %11s\n%-6d %8s %8s %8s %10s %10s %8.2fx %8.2fx %8.1fMB %8.1fMB %8.1fMB %8.1fMB %7.2fs %6.1fms %10.2f%%",
					"pods", "p50", "p99", "max", "direct p50", "direct p99", "p50 ratio", "p99 ratio", "RSS idle", "RSS after", "anon idle", "anon after", "CPU", "CPU/pod", "steady CPU",
					n, r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.max.Round(time.Millisecond),
					r.directP50.Round(time.Millisecond), r.directP99.Round(time.Millisecond),
					r.p50.Seconds()/r.directP50.Seconds(), r.p99.Seconds()/r.directP99.Seconds(),
					float64(r.rssIdle)/1e6, float64(r.rssAfter)/1e6, float64(r.anonIdle)/1e6, float64(r.anonAfter)/1e6,
					r.cpu.Seconds(), r.cpu.Seconds()*1000/float64(n), r.steadyPct)
			}
		})
	}
}

type startupResult struct {
	p50, p99, max       time.Duration
	directP50           time.Duration // the baseline's
	directP99           time.Duration
	rssIdle, rssAfter   int64
	anonIdle, anonAfter int64
	cpu                 time.Duration
	steadyPct           float64 // % of a core with the pods running
}

func startupRound(b *testing.B, count int) startupResult {
	b.StopTimer()
	n := newNode(b, strings.Fields(os.Getenv("BERTH_BENCH_AGENT_ARGS"))...)
	harness.DropPageCache(b, harness.Binary(b))
	a := n.start()
	pid := a.Pid()
	// The image is present, as in the kubelet's reference figures: the
	// round measures starts, not a pull.
	if _, err := n.cri.PullImage(context.Background(), n.env.BusyboxImage, nil, nil); err != nil {
		b.Fatal(err)
	}
	// Idle: once the agent has given back the binary's start-up pages.
	eventually(b, time.Minute, "the agent to give back its start-up pages", func() (bool, string) {
		return strings.Contains(a.Log(), "gave back the binary's start-up pages"), "not yet"
	})
	rssIdle, anonIdle := rss(b, pid), rssAnon(b, pid)
	cpu0 := cpuTime(b, pid)

	// Prepare the files, then move them in one after another as fast as
	// possible.
	written := map[string]time.Time{}
	tmp := filepath.Join(filepath.Dir(n.manifests), "staging")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range count {
		name := fmt.Sprintf("bench-%03d", i)
		if err := os.WriteFile(filepath.Join(tmp, name+".yaml"), []byte(podManifest(n.env, name, "", "app="+sleeper)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.StartTimer()
	for i := range count {
		name := fmt.Sprintf("bench-%03d", i)
		if err := os.Rename(filepath.Join(tmp, name+".yaml"), filepath.Join(n.manifests, name+".yaml")); err != nil {
			b.Fatal(err)
		}
		written[name+"-n1"] = time.Now()
	}
	started := map[string]time.Time{}
	ctx := context.Background()
	eventually(b, 10*time.Minute, fmt.Sprintf("%d pods running", count), func() (bool, string) {
		cs, err := n.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range cs {
			pod := c.GetLabels()[cri.LabelPodName]
			if _, ok := started[pod]; ok {
				continue
			}
			st, err := n.cri.ContainerStatus(ctx, c.GetId(), false)
			if err != nil {
				continue
			}
			started[pod] = time.Unix(0, st.GetStatus().GetStartedAt())
		}
		return len(started) == count, fmt.Sprintf("%d running", len(started))
	})
	b.StopTimer()
	cpu := cpuTime(b, pid) - cpu0
	rssAfter, anonAfter := rss(b, pid), rssAnon(b, pid)
	// The steady state: the agent's share of a core while the pods run.
	const window = 10 * time.Second
	steady0 := cpuTime(b, pid)
	time.Sleep(window)
	steady := float64(cpuTime(b, pid)-steady0) / float64(window) * 100
	var lat []time.Duration
	for pod, at := range started {
		lat = append(lat, at.Sub(written[pod]))
	}
	slices.Sort(lat)
	r := startupResult{p50: percentile(lat, 0.50), p99: percentile(lat, 0.99), max: lat[len(lat)-1], rssIdle: rssIdle, rssAfter: rssAfter, anonIdle: anonIdle, anonAfter: anonAfter, cpu: cpu, steadyPct: steady}
	n.removeAllAndWait()
	a.stop(b) // the agent would collect the baseline's pods as orphans
	direct := directRound(b, n, count)
	r.directP50, r.directP99 = percentile(direct, 0.50), percentile(direct, 0.99)
	return r
}

// percentile is the p-quantile of sorted latencies.
func percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// rss is the process's resident set in bytes.
func rss(b *testing.B, pid int) int64 { return procStatus(b, pid, "VmRSS:") }

// rssAnon is the anonymous part of the resident set (heap, stacks), without
// the pages of the binary itself.
func rssAnon(b *testing.B, pid int) int64 { return procStatus(b, pid, "RssAnon:") }

// procStatus reads one kB field of /proc/<pid>/status, in bytes.
func procStatus(b *testing.B, pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb * 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// cpuTime is the process's user + system CPU time.
func cpuTime(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command (which may hold spaces) start after ")".
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	// utime and stime are fields 14 and 15 of stat, 12 and 13 here.
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticks = 100 // USER_HZ
	return time.Duration(ut+st) * time.Second / ticks
}
