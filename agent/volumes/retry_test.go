package volumes

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestRetryAtFollowsTheMountBackOff: RetryAt is the earliest end of the
// pod's volume back-offs, doubling with each failure, zero for a pod
// without failures and when the back-off is off.
func TestRetryAtFollowsTheMountBackOff(t *testing.T) {
	e := newTestEnv(t)
	m, err := New(Config{RootDir: e.root, Objects: e.src, Clock: e.clock, MountBackOffInitial: time.Second, MountBackOffMax: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod("uid-retry", []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}}}},
	})
	other := testPod("uid-other", nil)
	t.Cleanup(func() { _ = m.TearDown(ctx, pod.UID) })
	if at := m.RetryAt(pod.UID); !at.IsZero() {
		t.Fatalf("RetryAt before any failure = %v, want zero", at)
	}
	start := e.clock.Now()
	if _, err := m.SetUp(ctx, pod); err == nil {
		t.Fatal("SetUp succeeded")
	}
	if at := m.RetryAt(pod.UID); !at.Equal(start.Add(time.Second)) {
		t.Fatalf("RetryAt after the first failure = %v, want %v", at, start.Add(time.Second))
	}
	// Inside the back-off SetUp does not try again: RetryAt stays.
	e.clock.Step(500 * time.Millisecond)
	if _, err := m.SetUp(ctx, pod); err == nil {
		t.Fatal("SetUp succeeded")
	}
	if at := m.RetryAt(pod.UID); !at.Equal(start.Add(time.Second)) {
		t.Fatalf("RetryAt inside the back-off = %v, want %v", at, start.Add(time.Second))
	}
	// After it, the next failure doubles the wait.
	e.clock.Step(500 * time.Millisecond)
	if _, err := m.SetUp(ctx, pod); err == nil {
		t.Fatal("SetUp succeeded")
	}
	if at, want := m.RetryAt(pod.UID), start.Add(3*time.Second); !at.Equal(want) {
		t.Fatalf("RetryAt after the second failure = %v, want %v", at, want)
	}
	if at := m.RetryAt(other.UID); !at.IsZero() {
		t.Errorf("RetryAt of another pod = %v, want zero", at)
	}
	if err := m.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if at := m.RetryAt(pod.UID); !at.IsZero() {
		t.Errorf("RetryAt after TearDown = %v, want zero", at)
	}

	off, err := New(Config{RootDir: t.TempDir(), Objects: e.src, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := off.SetUp(ctx, pod); err == nil {
		t.Fatal("SetUp succeeded")
	}
	t.Cleanup(func() { _ = off.TearDown(ctx, pod.UID) })
	if at := off.RetryAt(pod.UID); !at.IsZero() {
		t.Errorf("RetryAt without a back-off = %v, want zero", at)
	}
}
