package volumes

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// TestFailedMountEventForMissingObjects: a missing configMap or secret (not
// optional) and a failed hostPath check each record a FailedMount Warning
// on the pod in the kubelet's words, without berth's error classes.
func TestFailedMountEventForMissingObjects(t *testing.T) {
	e := newTestEnv(t)
	rec := record.NewFakeRecorder(10)
	m, err := New(Config{RootDir: e.root, Objects: e.src, Recorder: rec, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod("uid-fm", []v1.Volume{
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "later"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: e.root + "/not-there", Type: ptr(v1.HostPathDirectory)}}},
	})
	if _, err := m.SetUp(ctx, pod); err == nil {
		t.Fatal("SetUp succeeded")
	}
	t.Cleanup(func() { _ = m.TearDown(ctx, pod.UID) })
	want := []string{
		`Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "later" not found`,
		`Warning FailedMount MountVolume.SetUp failed for volume "sec" : secret "creds" not found`,
		`Warning FailedMount MountVolume.SetUp failed for volume "host" : hostPath type check failed: ` + e.root + `/not-there is not a directory`,
	}
	for _, w := range want {
		select {
		case got := <-rec.Events:
			if got != w {
				t.Errorf("event %q\nwant  %q", got, w)
			}
		default:
			t.Errorf("no event; want %q", w)
		}
	}
	// Without a back-off configured, the next SetUp tries (and records) again.
	if _, err := m.SetUp(ctx, pod); err == nil {
		t.Fatal("SetUp succeeded")
	}
	if n := len(rec.Events); n != 3 {
		t.Errorf("%d events after the second SetUp, want 3", n)
	}
}
