package imagegc

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/cri/critest"
	"berth/internal/errdefs"
)

// gcEnv is a manager over the CRI fake with images a (used by a running
// container), b (used by a container removed later), c (never used), d
// (pulled later), pause (pinned by reference) and the runtime's sandbox
// image.
type gcEnv struct {
	srv                 *critest.Server
	client              *cri.Client
	m                   *Manager
	now                 time.Time
	capacity, available int64
	ids                 map[string]string
}

func newGCEnv(t *testing.T) *gcEnv {
	t.Helper()
	e := &gcEnv{srv: critest.NewServer(t, critest.WithSandboxImage("registry.k8s.io/pause:3.6")), now: time.Unix(1_700_000_000, 0), capacity: 10 << 20, available: 9 << 20, ids: map[string]string{}}
	ctx := context.Background()
	var err error
	if e.client, err = cri.New(ctx, cri.Config{Endpoint: e.srv.Endpoint()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.client.Close() })
	for _, name := range []string{"a", "b", "c", "pause"} {
		e.ids[name] = e.srv.PreloadImage("example.com/" + name + ":1")
	}
	e.ids["sandbox"] = e.srv.PreloadImage("registry.k8s.io/pause:3.6")
	e.m, err = New(Config{
		Runtime: e.client, Policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute},
		ImageFs: func(context.Context) (int64, int64, error) { return e.capacity, e.available, nil },
		Pinned:  []string{"docker.io/whatever:1", "example.com/pause:1"},
		Now:     func() time.Time { return e.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// run starts a container of image in a new sandbox and returns its ID.
func (e *gcEnv) run(t *testing.T, name, image string) string {
	t.Helper()
	ctx := context.Background()
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: name}}
	sb, err := e.client.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := e.client.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: image},
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// images lists the image names left in the runtime.
func (e *gcEnv) images(t *testing.T) []string {
	t.Helper()
	list, err := e.client.ListImages(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for name, id := range e.ids {
		if slices.ContainsFunc(list, func(im *runtimeapi.Image) bool { return im.GetId() == id }) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func TestCollectsLeastRecentlyUsedDownToTheLowThreshold(t *testing.T) {
	e := newGCEnv(t)
	ctx := context.Background()
	e.run(t, "x", "example.com/a:1")
	y := e.run(t, "y", "example.com/b:1")
	// Under the threshold: nothing goes, but the images are now known.
	if err := e.m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.images(t); strings.Join(got, ",") != "a,b,c,pause,sandbox" {
		t.Fatalf("under the threshold: %v", got)
	}
	if err := e.client.RemoveContainer(ctx, y); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(4 * time.Minute)
	e.ids["d"] = e.srv.PreloadImage("example.com/d:1")
	if err := e.m.GarbageCollect(ctx); err != nil { // d first seen now
		t.Fatal(err)
	}

	// 86% used: 6% of 10 MiB to free, c (never used, 1 MiB) is enough.
	e.now = e.now.Add(time.Minute)
	e.available = 14 << 20 / 10
	if err := e.m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.images(t); strings.Join(got, ",") != "a,b,d,pause,sandbox" {
		t.Errorf("after freeing 6%%: %v, want c gone first (never used)", got)
	}

	// 99% used: b goes too, and that is all there is — a is in use, pause
	// and the sandbox image pinned, d too young.
	e.available = 1 << 17
	err := e.m.GarbageCollect(ctx)
	if err == nil || !strings.Contains(err.Error(), "Failed to garbage collect required amount of images. Attempted to free 1966080 bytes, but only found 1048") {
		t.Errorf("freeing 1.9 MiB with one 1 MiB image eligible: %v", err)
	}
	if got := e.images(t); strings.Join(got, ",") != "a,d,pause,sandbox" {
		t.Errorf("after the second collection: %v", got)
	}
}

func TestRemovalErrorsAreReported(t *testing.T) {
	e := newGCEnv(t)
	ctx := context.Background()
	if err := e.m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(time.Hour)
	e.available = 1 << 17
	e.srv.Inject("RemoveImage", errors.New("disk on fire"))
	err := e.m.GarbageCollect(ctx)
	if err == nil || !strings.Contains(err.Error(), "with errors in image deletion") || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("removal failing: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	fs := func(context.Context) (int64, int64, error) { return 1, 1, nil }
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{ImageFs: fs}, "Config.Runtime is required"},
		{Config{Runtime: &cri.Client{}}, "Config.ImageFs is required"},
		{Config{Runtime: &cri.Client{}, ImageFs: fs, Policy: Policy{HighThresholdPercent: 10, LowThresholdPercent: 20}}, "LowThresholdPercent 20 can not be higher than HighThresholdPercent 10"},
		{Config{Runtime: &cri.Client{}, ImageFs: fs, Period: -time.Second}, "Config.Period -1s: must not be negative"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

// DeleteUnused, the eviction manager's reclaim, removes every eligible
// image whatever the thresholds: not the one in use, not the pinned ones,
// not one seen for less than MinAge.
func TestDeleteUnusedIgnoresThresholds(t *testing.T) {
	e := newGCEnv(t)
	ctx := context.Background()
	e.run(t, "x", "example.com/a:1")
	if err := e.m.GarbageCollect(ctx); err != nil { // 10% used: nothing, the images are now known
		t.Fatal(err)
	}
	e.now = e.now.Add(5 * time.Minute)
	e.ids["d"] = e.srv.PreloadImage("example.com/d:1")
	if err := e.m.DeleteUnused(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.images(t); strings.Join(got, ",") != "a,d,pause,sandbox" {
		t.Errorf("after DeleteUnused: %v, want b and c gone", got)
	}
}
