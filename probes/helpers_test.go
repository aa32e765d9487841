package probes

import (
	"context"
	"fmt"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/cri/critest"
)

// *cri.Client is what the agent passes as Execer.
var _ Execer = (*cri.Client)(nil)

// newCRI starts the fake runtime and a real CRI client to it.
func newCRI(t testing.TB) (*critest.Server, *cri.Client) {
	t.Helper()
	srv := critest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := cri.New(ctx, cri.Config{Endpoint: srv.Endpoint()})
	if err != nil {
		t.Fatalf("cri.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv.PreloadImage("registry.test/app:1")
	return srv, c
}

// startContainers runs one sandbox per container and returns n running container IDs.
func startContainers(t testing.TB, c *cri.Client, n int) []string {
	t.Helper()
	ctx := context.Background()
	ids := make([]string, 0, n)
	for i := range n {
		sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{
			Name: fmt.Sprintf("pod-%d", i), Namespace: "default", Uid: fmt.Sprintf("uid-%d", i),
		}}
		sb, err := c.RunPodSandbox(ctx, sbCfg, "")
		if err != nil {
			t.Fatalf("RunPodSandbox: %v", err)
		}
		id, err := c.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: "registry.test/app:1"},
		}, sbCfg)
		if err != nil {
			t.Fatalf("CreateContainer: %v", err)
		}
		if err := c.StartContainer(ctx, id); err != nil {
			t.Fatalf("StartContainer: %v", err)
		}
		ids = append(ids, id)
	}
	return ids
}
