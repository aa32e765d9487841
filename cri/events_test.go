package cri_test

import (
	"context"
	"errors"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/cri/critest"
	"berth/internal/errdefs"
)

func TestGetContainerEvents(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	srv.AddImage("busybox")
	ctx, cancel := context.WithCancel(testCtx(t))
	events, err := c.GetContainerEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sb, id := runPod(t, testCtx(t), c, "p", "busybox")
	if err := srv.ExitContainer(id, 1, ""); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id string
		t  runtimeapi.ContainerEventType
	}{
		{sb, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT},
		{sb, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT},
		{id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT},
		{id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT},
		{id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT},
	}
	for i, w := range want {
		ev := <-events
		if ev.GetContainerId() != w.id || ev.GetContainerEventType() != w.t || ev.GetPodSandboxStatus().GetId() != sb {
			t.Fatalf("event %d = %v %v, want %v for %s in sandbox %s", i, ev.GetContainerId(), ev.GetContainerEventType(), w.t, w.id, sb)
		}
		if w.id == id && ev.GetContainersStatuses()[0].GetId() != id {
			t.Fatalf("event %d carries statuses %v, want the container's", i, ev.GetContainersStatuses())
		}
	}
	cancel()
	for range events {
		// Drain until the client closes the channel.
	}
}

func TestGetContainerEventsUnimplemented(t *testing.T) {
	_, c := newClient(t, cri.Config{}, critest.WithoutContainerEvents())
	_, err := c.GetContainerEvents(testCtx(t))
	if !errors.Is(err, errdefs.ErrUnimplemented) {
		t.Fatalf("GetContainerEvents on a runtime without them = %v, want ErrUnimplemented", err)
	}
}
