package pleg

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/podruntime"
	"berth/agent/podstate"
	"berth/cri"
	"berth/cri/critest"
)

var attempts atomic.Uint32

// attempt numbers sandboxes so one pod may have several.
func attempt() uint32 { return attempts.Add(1) }

type recorder struct {
	mu      sync.Mutex
	changed []types.UID
	pods    int
}

func (r *recorder) take() []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.changed
	r.changed = nil
	return out
}

func runPod(t *testing.T, c *cri.Client, uid string) (sandboxID, containerID string) {
	t.Helper()
	ctx := context.Background()
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p" + uid, Namespace: "default", Uid: uid, Attempt: attempt()},
		Labels:   map[string]string{cri.LabelPodUID: uid, cri.LabelPodName: "p" + uid, cri.LabelPodNamespace: "default"},
	}
	sb, err := c.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PullImage(ctx, "busybox", nil, nil); err != nil {
		t.Fatal(err)
	}
	id, err := c.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Labels:   map[string]string{cri.LabelPodUID: uid, cri.LabelContainerName: "app"},
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return sb, id
}

func TestRelistReportsChangedPodsOnly(t *testing.T) {
	srv := critest.NewServer(t, critest.WithoutContainerEvents())
	srv.AddImage("busybox")
	c, err := cri.New(context.Background(), cri.Config{Endpoint: srv.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := &recorder{}
	p, err := New(Config{Cache: podruntime.NewCache(podruntime.New(c)), Changed: func(uid types.UID) {
		rec.mu.Lock()
		rec.changed = append(rec.changed, uid)
		rec.mu.Unlock()
	}, Relisted: func(pods map[types.UID]*podstate.Pod) { rec.pods = len(pods) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, a := runPod(t, c, "a")
	runPod(t, c, "b")
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 2 || rec.pods != 2 {
		t.Fatalf("first relist reported %v (%d pods), want both pods", got, rec.pods)
	}
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("unchanged relist reported %v", got)
	}
	if err := srv.ExitContainer(a, 1, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("after an exit relist reported %v, want [a]", got)
	}
}

func TestContainerEventsWakeAtOnce(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	c, err := cri.New(context.Background(), cri.Config{Endpoint: srv.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	name := "ev0"
	exited := map[types.UID]bool{}
	_, id := runPod(t, c, name)
	changed := make(chan types.UID, 16)
	p, err := New(Config{Cache: podruntime.NewCache(podruntime.New(c)), CRI: c, Period: time.Hour, Changed: func(uid types.UID) { changed <- uid }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)
	<-changed // the first relist
	// The subscription starts beside the first relist: make containers exit
	// until one is reported (the relist period is an hour, so only an event
	// can report it).
	// Each attempt runs a pod of its own: a container name is reserved
	// for its pod until removed.
	deadline := time.Now().Add(10 * time.Second)
	for attempt := 1; ; attempt++ {
		if err := srv.ExitContainer(id, 0, ""); err != nil {
			t.Fatal(err)
		}
		exited[types.UID(name)] = true
		select {
		case uid := <-changed:
			if !exited[uid] {
				t.Fatalf("event for %q, whose container did not exit", uid)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no change reported from container events")
		}
		name = fmt.Sprintf("ev%d", attempt)
		_, id = runPod(t, c, name)
	}
}
