package podworker

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/cri/critest"
)

// An evicted pod is stopped and never started again, whatever its restart
// policy, and is Failed with the eviction's reason, message and
// DisruptionTarget condition; Stopped reports it once that is published.
func TestEvictedPodStopsForGood(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("hog", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	eventually(t, "app running", func() (bool, string) { return h.running(pod.UID, "app") != nil, "" })
	if h.m.Stopped(pod.UID) {
		t.Fatal("Stopped before any eviction")
	}
	cond := &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: "low on memory"}
	if !h.m.Evict(pod.UID, Eviction{GracePeriod: 2 * time.Second, Reason: "Evicted", Message: "low on memory", Condition: cond}) {
		t.Fatal("Evict of a running pod reported no worker")
	}
	eventually(t, "the eviction done", func() (bool, string) { return h.m.Stopped(pod.UID), "" })
	st := h.podStatus(pod.UID)
	var target *v1.PodCondition
	for i := range st.Conditions {
		if st.Conditions[i].Type == v1.DisruptionTarget {
			target = &st.Conditions[i]
		}
	}
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || st.Message != "low on memory" || target == nil ||
		target.Reason != v1.PodReasonTerminationByKubelet || target.LastTransitionTime.IsZero() {
		t.Fatalf("status after eviction: %s %q %q, DisruptionTarget %+v", st.Phase, st.Reason, st.Message, target)
	}
	if cs := containerStatus(st, "app"); cs.State.Terminated == nil {
		t.Errorf("app after eviction: %+v", cs.State)
	}
	for _, sb := range h.sandboxes(pod.UID) {
		if sb.GetState().String() != "SANDBOX_NOTREADY" {
			t.Errorf("sandbox %s still %s", sb.GetId(), sb.GetState())
		}
	}
	// A later sync (a spec update) starts nothing again.
	h.m.Update(pod.DeepCopy())
	time.Sleep(500 * time.Millisecond) // two resyncs: a restart would show
	if c := h.running(pod.UID, "app"); c != nil {
		t.Errorf("the evicted pod's container %s runs again", c.GetId())
	}
	if h.m.Evict("uid-unknown", Eviction{}) {
		t.Error("Evict of an unknown pod reported a worker")
	}
}
