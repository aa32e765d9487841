package podworker

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri/critest"
)

// An ephemeral container added to a running pod starts in its sandbox
// without restarting anything, is reported in ephemeralContainerStatuses,
// never restarts, and goes with the pod; one naming a target that does not
// exist fails with upstream's CreateContainerConfigError.
func TestEphemeralContainers(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("debugme", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	var app *runtimeapi.Container
	eventually(t, "app running", func() (bool, string) { app = h.running(pod.UID, "app"); return app != nil, "" })
	sandboxes := srv.Calls("RunPodSandbox")

	pod = pod.DeepCopy()
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"}, TargetContainerName: "app"},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "lost", Image: "busybox"}, TargetContainerName: "nope"},
	}
	h.m.Update(pod)
	var dbg *runtimeapi.Container
	eventually(t, "debugger running and reported", func() (bool, string) {
		dbg = h.running(pod.UID, "debugger")
		st := h.podStatus(pod.UID)
		var running, lost bool
		for _, cs := range st.EphemeralContainerStatuses {
			running = running || cs.Name == "debugger" && cs.State.Running != nil && cs.ContainerID == "containerd://"+dbg.GetId()
			lost = lost || cs.Name == "lost" && cs.State.Waiting != nil && cs.State.Waiting.Reason == ReasonCreateContainerConfigError &&
				cs.State.Waiting.Message == "unable to find target container nope"
		}
		return dbg != nil && running && lost, fmt.Sprintf("%+v", st.EphemeralContainerStatuses)
	})
	if h.running(pod.UID, "app").GetId() != app.GetId() || srv.Calls("RunPodSandbox") != sandboxes {
		t.Fatal("adding an ephemeral container restarted the pod")
	}
	if n := len(h.containers(pod.UID, "lost")); n != 0 {
		t.Errorf("%d containers for an ephemeral container whose target does not exist", n)
	}

	if err := srv.ExitContainer(dbg.GetId(), 0, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "debugger terminated", func() (bool, string) {
		for _, cs := range h.podStatus(pod.UID).EphemeralContainerStatuses {
			if cs.Name == "debugger" && cs.State.Terminated != nil {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", h.podStatus(pod.UID).EphemeralContainerStatuses)
	})
	time.Sleep(500 * time.Millisecond) // a few resyncs: still not restarted
	if n := len(h.containers(pod.UID, "debugger")); n != 1 {
		t.Errorf("%d debugger containers: an ephemeral container must never restart", n)
	}
	if st := h.podStatus(pod.UID); st.Phase != v1.PodRunning {
		t.Errorf("phase %s", st.Phase)
	}

	h.m.Remove(pod.UID)
	eventually(t, "all gone", func() (bool, string) { return len(h.containers(pod.UID, "")) == 0 && !h.m.Known(pod.UID), "" })
}
