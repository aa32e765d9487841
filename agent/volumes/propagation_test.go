package volumes

import (
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"berth/internal/mountinfo"
)

// Regression: a HostToContainer or Bidirectional mount of an emptyDir was
// refused by containerd ("… is mounted on / but it is not a shared or
// slave mount") because the agent's root dir is on a private mount here.
func TestPropagatedVolumesBecomeSharedMounts(t *testing.T) {
	e := newTestEnv(t)
	host := t.TempDir()
	vols := []v1.Volume{
		{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "ram", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		{Name: "private", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}}},
	}
	none, h2c, bidi := v1.MountPropagationNone, v1.MountPropagationHostToContainer, v1.MountPropagationBidirectional
	app := v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{
		{Name: "disk", MountPath: "/disk", MountPropagation: &h2c},
		{Name: "disk", MountPath: "/sub", SubPath: "dir", MountPropagation: &h2c},
		{Name: "private", MountPath: "/private", MountPropagation: &none},
		{Name: "host", MountPath: "/host", MountPropagation: &h2c},
	}}
	priv := v1.Container{Name: "priv", SecurityContext: &v1.SecurityContext{Privileged: ptr(true)},
		VolumeMounts: []v1.VolumeMount{{Name: "ram", MountPath: "/ram", MountPropagation: &bidi}}}
	pod := testPod("uid-propagation", vols, app, priv)
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	for range 2 { // a container restart does not mount again
		for _, c := range []*v1.Container{&app, &priv} {
			if _, err := ms.Container(c, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"disk", "ram"} {
		dir, _ := ms.HostPath(name)
		var at []mountinfo.Mount
		for _, m := range mounts {
			if m.MountPoint == dir {
				at = append(at, m)
			}
		}
		if len(at) != 1 || !at[0].Shared() {
			t.Errorf("volume %s: mounts at %s %v, want one shared mount", name, dir, at)
		}
	}
	privateDir, _ := ms.HostPath("private")
	if mountinfo.IsMountPoint(mounts, privateDir) {
		t.Error("a volume mounted without propagation became a mount point")
	}
	if mountinfo.IsMountPoint(mounts, host) {
		t.Error("a hostPath volume was made a mount point")
	}
	subpaths := mountinfo.Under(mounts, filepath.Join(e.mgr.podDir(pod.UID), "volume-subpaths"))
	if len(subpaths) != 1 || !subpaths[0].Shared() {
		t.Errorf("the subPath of the propagated volume: %v, want one shared bind mount", subpaths)
	}

	if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	mounts, err = mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		t.Fatal(err)
	}
	if left := mountinfo.Under(mounts, e.mgr.podDir(pod.UID)); len(left) > 0 {
		t.Errorf("mounted after TearDown: %v", left)
	}
}
