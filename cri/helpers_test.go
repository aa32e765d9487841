package cri_test

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/cri/critest"
)

// newClient starts a fake runtime and a client to it; cfg's zero fields take the defaults.
func newClient(t *testing.T, cfg cri.Config, opts ...critest.Option) (*critest.Server, *cri.Client) {
	t.Helper()
	srv := critest.NewServer(t, opts...)
	cfg.Endpoint = srv.Endpoint()
	c, err := cri.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("cri.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return srv, c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func podConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
		Labels:       map[string]string{"app": name, cri.LabelPodName: name, cri.LabelPodNamespace: "default"},
		LogDirectory: "/var/log/pods/default_" + name + "_" + name + "-uid",
	}
}

func containerConfig(name, image string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Labels:   map[string]string{cri.LabelContainerName: name},
		LogPath:  name + "/0.log",
	}
}

// runPod runs a sandbox and one started container in it, pulling image first.
func runPod(t *testing.T, ctx context.Context, c *cri.Client, name, image string) (sandboxID, containerID string) {
	t.Helper()
	if _, err := c.PullImage(ctx, image, nil, nil); err != nil {
		t.Fatalf("PullImage: %v", err)
	}
	pc := podConfig(name)
	sandboxID, err := c.RunPodSandbox(ctx, pc, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	containerID, err = c.CreateContainer(ctx, sandboxID, containerConfig("main", image), pc)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := c.StartContainer(ctx, containerID); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	return sandboxID, containerID
}
