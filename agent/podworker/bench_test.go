package podworker

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/cri/critest"
)

// BenchmarkPodStart measures the agent's own cost per pod: pods started by a
// Manager against the in-memory CRI runtime (whose calls cost microseconds),
// from Update to the pod's status showing it Running. Reported per pod: wall
// time, CPU time of the whole process (agent and fake runtime together, an
// upper bound of the agent's) and allocations.
func BenchmarkPodStart(b *testing.B) {
	for _, count := range []int{10, 100} {
		b.Run(fmt.Sprintf("pods=%d", count), func(b *testing.B) {
			srv := critest.NewServer(b, critest.WithoutContainerEvents())
			srv.AddImage("busybox")
			h := newBenchHarness(b, srv)
			b.ReportAllocs()
			b.ResetTimer()
			var cpu time.Duration
			for round := range b.N {
				pods := make([]*v1.Pod, count)
				for i := range pods {
					pods[i] = testPod(fmt.Sprintf("r%d-p%d", round, i), v1.RestartPolicyAlways, nil, "app")
				}
				c0 := processCPU()
				for _, p := range pods {
					h.m.Update(p)
				}
				for _, p := range pods {
					waitRunning(b, h, p.UID)
				}
				cpu += processCPU() - c0
				b.StopTimer()
				for _, p := range pods {
					h.m.Remove(p.UID)
				}
				for _, p := range pods {
					for h.m.Known(p.UID) {
						runtime.Gosched()
					}
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*count), "µs/pod")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*count), "cpu-µs/pod")
		})
	}
}

func waitRunning(b *testing.B, h *harness, uid types.UID) {
	deadline := time.Now().Add(time.Minute)
	for {
		if st, ok := h.status.Status(uid); ok && st.Phase == v1.PodRunning {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("pod %s not running", uid)
		}
		time.Sleep(time.Millisecond)
	}
}

// processCPU is the CPU time (user + system) the test process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
