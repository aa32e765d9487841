package podworker

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/cri/critest"
)

// TestDeleteAllUnusedContainersRemovesFinishedPods: under disk pressure the
// eviction manager reclaims the finished pods' runtime first — a Succeeded
// pod loses its container and sandbox while its status (phase, the
// container's terminated state) stands and nothing of it runs again; a
// running pod keeps everything.
func TestDeleteAllUnusedContainersRemovesFinishedPods(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newConfiguredHarness(t, srv, nil)
	done := testPod("done", v1.RestartPolicyNever, nil, "app")
	live := testPod("live", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(done)
	h.m.Update(live)
	eventually(t, "both running", func() (bool, string) {
		return h.running(done.UID, "app") != nil && h.running(live.UID, "app") != nil, ""
	})
	if err := srv.ExitContainer(h.running(done.UID, "app").GetId(), 0, "Completed"); err != nil {
		t.Fatal(err)
	}
	h.m.Wake(done.UID)
	eventually(t, "the finished pod Succeeded", func() (bool, string) {
		return h.podStatus(done.UID).Phase == v1.PodSucceeded, fmt.Sprintf("%+v", h.podStatus(done.UID))
	})
	before := h.podStatus(done.UID)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.m.DeleteAllUnusedContainers(ctx); err != nil {
		t.Fatal(err)
	}
	if cs, sbs := h.containers(done.UID, ""), h.sandboxes(done.UID); len(cs) != 0 || len(sbs) != 0 {
		t.Fatalf("the finished pod still has %d containers, %d sandboxes", len(cs), len(sbs))
	}
	h.m.Wake(done.UID)
	time.Sleep(500 * time.Millisecond) // syncs after the removal: nothing may start again
	if cs, sbs := h.containers(done.UID, ""), h.sandboxes(done.UID); len(cs) != 0 || len(sbs) != 0 {
		t.Fatalf("the finished pod was started again: %d containers, %d sandboxes", len(cs), len(sbs))
	}
	after := h.podStatus(done.UID)
	term := containerStatus(after, "app").State.Terminated
	if after.Phase != v1.PodSucceeded || term == nil || term.ExitCode != 0 || term.ContainerID != containerStatus(before, "app").State.Terminated.ContainerID {
		t.Errorf("status after the reclaim %+v, want the Succeeded one kept", after)
	}
	if h.running(live.UID, "app") == nil || len(h.sandboxes(live.UID)) != 1 {
		t.Error("the running pod lost its container or sandbox")
	}
}
