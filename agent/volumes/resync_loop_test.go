package volumes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"berth/internal/errdefs"
)

// podList is a PodLister over a list the test changes.
type podList struct {
	mu   sync.Mutex
	pods []*v1.Pod
}

func (l *podList) set(pods ...*v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pods = pods
}

func (l *podList) list() ([]*v1.Pod, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*v1.Pod(nil), l.pods...), nil
}

// eventually polls cond every 10 ms for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readString(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

func TestRunResyncUpdatesListedPodsEveryPeriod(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"k": "v1"}, nil)
	pod := testPod("uid-loop", []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "tier", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}},
		}}}},
	})
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	cfgDir, _ := ms.HostPath("cfg")
	infoDir, _ := ms.HostPath("info")
	// A pod whose volumes were never set up stays untouched.
	other := testPod("uid-never-set-up", pod.Spec.Volumes)
	// A pod being deleted is not resynced.
	deleting := testPod("uid-deleting", pod.Spec.Volumes[:1])
	deletingMs, err := e.mgr.SetUp(ctx, deleting)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, deleting.UID) })
	deleting.DeletionTimestamp = &metav1.Time{Time: e.clock.Now()}
	deletingDir, _ := deletingMs.HostPath("cfg")

	list := &podList{}
	list.set(pod, other, deleting)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.mgr.RunResync(runCtx, time.Minute, list.list) }()
	eventually(t, "RunResync's ticker", e.clock.HasWaiters)

	e.api.putConfigMap("ns1", "cfg", map[string]string{"k": "v2"}, nil)
	updated := *pod
	updated.Labels = map[string]string{"tier": "back"}
	list.set(&updated, other, deleting)
	if got := readString(filepath.Join(cfgDir, "k")); got != "v1" {
		t.Fatalf("before a period passed: %q, want v1", got)
	}
	e.clock.Step(time.Minute)
	eventually(t, "the configMap and label update", func() bool {
		return readString(filepath.Join(cfgDir, "k")) == "v2" && readString(filepath.Join(infoDir, "tier")) == "back"
	})
	if got := readString(filepath.Join(deletingDir, "k")); got != "v1" {
		t.Errorf("a pod being deleted was resynced: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.root, "pods", "uid-never-set-up")); err == nil {
		t.Error("resync set up the volumes of a pod that had none set up")
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("RunResync returned %v when its context ended, want nil", err)
	}
}

func TestRunResyncRejectsBadArguments(t *testing.T) {
	e := newTestEnv(t)
	list := (&podList{}).list
	for name, run := range map[string]func() error{
		"zero period": func() error { return e.mgr.RunResync(ctx, 0, list) },
		"nil lister":  func() error { return e.mgr.RunResync(ctx, time.Second, nil) },
	} {
		if err := run(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestListedPodsListsEveryPodOfTheLister(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, uid := range []string{"a", "b"} {
		p := testPod(uid, nil)
		p.Name = "pod-" + uid
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := ListedPods(corelisters.NewPodLister(indexer))()
	if err != nil || len(pods) != 2 {
		t.Fatalf("ListedPods: %d pods, %v; want 2", len(pods), err)
	}
}

func TestRunResyncKeepsContentAndRecordsFailedMount(t *testing.T) {
	e := newTestEnv(t)
	rec := record.NewFakeRecorder(10)
	m, err := New(Config{RootDir: e.root, Objects: e.src, Recorder: rec, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	e.api.putConfigMap("ns1", "cfg", map[string]string{"k": "v1"}, nil)
	pod := testPod("uid-gone", []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
	})
	ms, err := m.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.TearDown(ctx, pod.UID) })
	dir, _ := ms.HostPath("cfg")
	e.api.mu.Lock()
	delete(e.api.configMaps, "ns1/cfg")
	e.api.mu.Unlock()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	list := &podList{}
	list.set(pod)
	go func() { _ = m.RunResync(runCtx, time.Minute, list.list) }()
	eventually(t, "RunResync's timer", e.clock.HasWaiters)
	e.clock.Step(time.Minute)
	select {
	case ev := <-rec.Events:
		want := `Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found`
		if ev != want {
			t.Errorf("event %q, want %q", ev, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no FailedMount event for the volume whose configMap is gone")
	}
	if got := readString(filepath.Join(dir, "k")); got != "v1" {
		t.Errorf("the volume's file reads %q after its configMap was deleted, want the old content v1", got)
	}
}
