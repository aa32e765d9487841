package podworker

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/metrics"
	"berth/cri/critest"
)

// criMethods are the CRI calls a pod worker and the PLEG make.
var criMethods = []string{
	"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus", "ListPodSandbox",
	"CreateContainer", "StartContainer", "StopContainer", "RemoveContainer", "ContainerStatus", "ListContainers",
	"ImageStatus", "PullImage", "ListImages",
}

// criCalls counts the calls srv served, in all and of the two list calls.
func criCalls(srv *critest.Server) (all, lists int) {
	for _, m := range criMethods {
		all += srv.Calls(m)
	}
	return all, srv.Calls("ListPodSandbox") + srv.Calls("ListContainers")
}

// BenchmarkCRICalls counts the runtime calls of the agent's pod path (the
// harness's pod workers and PLEG, relisting every second, against the
// in-memory CRI runtime): per pod start (Update to Running, pods started one at a time)
// and per steady-state sync of a running pod (the resync of a pod whose
// runtime state did not change), the PLEG's relists included.
func BenchmarkCRICalls(b *testing.B) {
	srv := critest.NewServer(b, critest.WithoutContainerEvents())
	srv.AddImage("busybox")
	reg := prometheus.NewRegistry()
	met, err := metrics.New(reg, "node1")
	if err != nil {
		b.Fatal(err)
	}
	h := newConfiguredHarness(b, srv, func(c *Config) { c.Metrics = met })
	b.ResetTimer()
	var startCalls, startLists, syncCalls, syncLists, syncs float64
	for round := range b.N {
		pods := make([]*v1.Pod, 5)
		for i := range pods {
			pods[i] = testPod(fmt.Sprintf("c%d-p%d", round, i), v1.RestartPolicyAlways, nil, "app")
			all0, lists0 := criCalls(srv)
			h.m.Update(pods[i])
			waitRunning(b, h, pods[i].UID)
			all1, lists1 := criCalls(srv)
			startCalls += float64(all1 - all0)
			startLists += float64(lists1 - lists0)
		}
		time.Sleep(time.Second) // the pods settle
		s0 := syncCount(b, reg)
		all0, lists0 := criCalls(srv)
		time.Sleep(2 * time.Second) // resyncs every 200 ms, relists every second
		all1, lists1 := criCalls(srv)
		syncs += syncCount(b, reg) - s0
		syncCalls += float64(all1 - all0)
		syncLists += float64(lists1 - lists0)
		b.StopTimer()
		for _, p := range pods {
			h.m.Remove(p.UID)
		}
		for _, p := range pods {
			waitGone(b, h, p.UID)
		}
		b.StartTimer()
	}
	starts := float64(b.N * 5)
	b.ReportMetric(startCalls/starts, "cri-calls/pod-start")
	b.ReportMetric(startLists/starts, "list-calls/pod-start")
	b.ReportMetric(syncCalls/syncs, "cri-calls/sync")
	b.ReportMetric(syncLists/syncs, "list-calls/sync")
}

// syncCount is the number of steady-state syncs the workers ran.
func syncCount(b testing.TB, reg prometheus.Gatherer) float64 {
	families, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "kubelet_pod_worker_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" && l.GetValue() == metrics.OperationSync {
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return 0
}

func waitGone(b *testing.B, h *harness, uid types.UID) {
	deadline := time.Now().Add(time.Minute)
	for h.m.Known(uid) {
		if time.Now().After(deadline) {
			b.Fatalf("pod %s not removed", uid)
		}
		time.Sleep(time.Millisecond)
	}
}
