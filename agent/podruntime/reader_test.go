package podruntime

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/podstate"
	"berth/cri"
	"berth/cri/critest"
)

func TestReaderGroupsByPodAndReadsTerminationMessages(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	ctx := context.Background()
	c, err := cri.New(ctx, cri.Config{Endpoint: srv.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msgFile := filepath.Join(t.TempDir(), "msg")
	if err := os.WriteFile(msgFile, []byte("it is done"), 0o644); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{cri.LabelPodUID: "u1", cri.LabelPodName: "web", cri.LabelPodNamespace: "ns"}
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "u1"}, Labels: labels}
	sb, err := c.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PullImage(ctx, "busybox", nil, nil); err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
		Labels:      map[string]string{cri.LabelPodUID: "u1", cri.LabelContainerName: "app"},
		Annotations: map[string]string{cri.AnnotationContainerTerminationMessagePath: "/dev/termination-log"},
		Mounts:      []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: msgFile}},
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	r := New(c)
	cache := NewCache(r)
	p, err := cache.GetNewerThan(ctx, "u1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "web" || p.Namespace != "ns" || len(p.Sandboxes) != 1 || len(p.Sandboxes[0].IPs) != 1 || len(p.Containers) != 1 ||
		p.Containers[0].State != podstate.ContainerRunning {
		t.Fatalf("pod %+v", p)
	}
	if err := srv.ExitContainer(id, 2, ""); err != nil {
		t.Fatal(err)
	}
	all, err := r.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := all["u1"].Latest("app")
	if got == nil || got.State != podstate.ContainerExited || got.ExitCode != 2 || got.Message != "it is done" {
		t.Fatalf("exited container %+v", got)
	}
	statusCalls := srv.Calls("ContainerStatus")
	if _, err := cache.GetNewerThan(ctx, "u1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if srv.Calls("ContainerStatus") != statusCalls {
		t.Error("an unchanged container's status was fetched again")
	}
	empty, err := cache.GetNewerThan(ctx, "nobody", time.Now())
	if err != nil || len(empty.Containers)+len(empty.Sandboxes) != 0 || empty.UID != "nobody" {
		t.Fatalf("unknown pod: %+v %v", empty, err)
	}
}
