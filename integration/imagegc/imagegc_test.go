// Package imagegc runs the agent's image garbage collector (agent/imagegc)
// against a real containerd: an image a container uses stays, the sandbox
// image containerd's config names stays (containerd 1.6 does not report it
// pinned), and an unused image goes once the image filesystem is over the
// threshold.
package imagegc

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/imagegc"
	"berth/cri"
	"berth/integration/nodeenv"
)

func TestMain(m *testing.M) { nodeenv.Main(m, nodeenv.Options{}) }

// tags lists every tag containerd has.
func tags(t *testing.T, ctx context.Context, c *cri.Client) []string {
	t.Helper()
	list, err := c.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, im := range list {
		out = append(out, im.GetRepoTags()...)
	}
	slices.Sort(out)
	return out
}

func TestCollectsOnlyUnusedUnpinnedImages(t *testing.T) {
	nodeenv.Require(t)
	env := nodeenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cri.New(ctx, cri.Config{Endpoint: env.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.PullImage(ctx, env.BusyboxImage, nil, nil); err != nil {
		t.Fatal(err)
	}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "gc", Namespace: "integration", Uid: "imagegc-1"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
	sb, err := c.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	removeSandbox := func() {
		_ = c.StopPodSandbox(context.Background(), sb)
		_ = c.RemovePodSandbox(context.Background(), sb)
	}
	defer removeSandbox()
	if _, err := c.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "user"}, Image: &runtimeapi.ImageSpec{Image: env.BusyboxImage},
		Command: []string{"sleep", "60"},
	}, sbCfg); err != nil {
		t.Fatal(err)
	}
	before := tags(t, ctx, c)
	if !slices.Contains(before, env.BusyboxImage) || !slices.Contains(before, env.PauseImage) {
		t.Fatalf("images before: %v, want %s and %s", before, env.BusyboxImage, env.PauseImage)
	}

	// The image filesystem 99% full: everything removable must go.
	m, err := imagegc.New(imagegc.Config{
		Runtime: c, Policy: imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80},
		ImageFs: func(context.Context) (int64, int64, error) { return 100 << 30, 1 << 30, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	err = m.GarbageCollect(ctx)
	if err == nil || !strings.Contains(err.Error(), "but only found 0 bytes eligible to free") {
		t.Errorf("with busybox in use: %v, want nothing eligible", err)
	}
	if got := tags(t, ctx, c); !slices.Equal(got, before) {
		t.Errorf("images after collecting with busybox in use: %v, want %v", got, before)
	}

	removeSandbox() // its container goes with it
	err = m.GarbageCollect(ctx)
	if err == nil || !strings.Contains(err.Error(), "Failed to garbage collect required amount of images") {
		t.Errorf("with busybox unused: %v, want too little freed", err)
	}
	after := tags(t, ctx, c)
	if slices.Contains(after, env.BusyboxImage) {
		t.Errorf("unused %s was not removed: %v", env.BusyboxImage, after)
	}
	if !slices.Contains(after, env.PauseImage) {
		t.Errorf("the sandbox image %s was removed: %v", env.PauseImage, after)
	}
}
