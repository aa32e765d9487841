package volumes

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"berth/internal/mountinfo"
)

// everyKindPod has a volume of each kind that puts something under the
// pod directory, including two mounts (tmpfs) and a subPath bind mount.
func everyKindPod(uid string) *v1.Pod {
	return testPod(uid, []v1.Volume{
		{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("16Mi"))}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
	}, v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "sec", MountPath: "/etc/user", SubPath: "user"}}})
}

func podMounts(t *testing.T, root, uid string) []mountinfo.Mount {
	t.Helper()
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		t.Fatal(err)
	}
	return mountinfo.Under(mounts, filepath.Join(root, "pods", uid))
}

func TestTearDownIdempotent(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "A"}, nil)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin")})

	// Never set up: nothing to do, no error, twice.
	for i := 0; i < 2; i++ {
		if err := e.mgr.TearDown(ctx, "never-set-up"); err != nil {
			t.Fatalf("TearDown of an unknown pod: %v", err)
		}
	}

	pod := everyKindPod("uid-td")
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Container(&pod.Spec.Containers[0], nil); err != nil {
		t.Fatal(err)
	}
	if n := len(podMounts(t, e.root, "uid-td")); n != 3 {
		t.Fatalf("%d mounts under the pod, want 3 (two tmpfs, one subPath)", n)
	}
	// Files the agent keeps beside the volumes stay.
	other := filepath.Join(e.root, "pods", "uid-td", "containers", "app", "termination-log")
	if err := os.MkdirAll(filepath.Dir(other), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
			t.Fatalf("TearDown #%d: %v", i+1, err)
		}
		if left := podMounts(t, e.root, "uid-td"); len(left) != 0 {
			t.Fatalf("mounts left after TearDown #%d: %+v", i+1, left)
		}
		for _, sub := range []string{"volumes", "volume-subpaths"} {
			if _, err := os.Lstat(filepath.Join(e.root, "pods", "uid-td", sub)); !os.IsNotExist(err) {
				t.Errorf("%s left after TearDown #%d: %v", sub, i+1, err)
			}
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("TearDown removed the agent's other pod files: %v", err)
	}
}

func TestTearDownAfterHalfFailedSetUp(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "A"}, nil)
	// The secret is missing: disk, mem and cfg get set up, sec fails.
	pod := everyKindPod("uid-half")
	if _, err := e.mgr.SetUp(ctx, pod); err == nil {
		t.Fatal("SetUp with a missing secret succeeded")
	}
	if n := len(podMounts(t, e.root, "uid-half")); n != 1 {
		t.Fatalf("%d mounts after the half-failed SetUp, want 1 (the memory emptyDir)", n)
	}
	if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if left := podMounts(t, e.root, "uid-half"); len(left) != 0 {
		t.Fatalf("mounts left: %+v", left)
	}
	if _, err := os.Lstat(filepath.Join(e.root, "pods", "uid-half", "volumes")); !os.IsNotExist(err) {
		t.Errorf("volumes left: %v", err)
	}
	// The secret appears: the retry sets everything up.
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin")})
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
}

func TestTearDownDoesNotFollowSymlinks(t *testing.T) {
	e := newTestEnv(t)
	outside := t.TempDir()
	precious := filepath.Join(outside, "precious")
	if err := os.WriteFile(precious, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := testPod("uid-links", []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}})
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	scratch, _ := ms.HostPath("scratch")
	if err := os.Symlink(outside, filepath.Join(scratch, "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(precious, filepath.Join(scratch, "filelink")); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(precious); err != nil || string(data) != "keep" {
		t.Fatalf("file outside the pod dir after TearDown: %q, %v", data, err)
	}
}

func TestTearDownRefusesToDeleteAForeignMount(t *testing.T) {
	requireRoot(t)
	// A tmpfs someone mounted inside a volume (as a container with
	// Bidirectional propagation could) is unmounted, not emptied in place.
	e := newTestEnv(t)
	pod := testPod("uid-foreign", []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}})
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	scratch, _ := ms.HostPath("scratch")
	inner := filepath.Join(scratch, "inner")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mountTmpfs(inner, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if len(mountsAt(t, inner)) != 0 {
		t.Error("inner tmpfs still mounted")
	}
}

func TestReconstructAfterRestart(t *testing.T) {
	e := newTestEnv(t)
	e.api.putConfigMap("ns1", "cfg", map[string]string{"a": "A"}, nil)
	e.api.putSecret("ns1", "creds", map[string][]byte{"user": []byte("admin")})
	kept, gone := everyKindPod("uid-kept"), everyKindPod("uid-gone")
	for _, pod := range []*v1.Pod{kept, gone} {
		ms, err := e.mgr.SetUp(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ms.Container(&pod.Spec.Containers[0], nil); err != nil {
			t.Fatal(err)
		}
	}

	// The agent restarts: a new Manager on the same root.
	restarted := e.newManager(t)
	found, err := restarted.Reconstruct(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 {
		t.Fatalf("Reconstruct found %d pods, want 2: %+v", len(found), found)
	}
	for _, p := range found {
		mounted := map[string]bool{}
		for _, v := range p.Volumes {
			mounted[v.Plugin+"/"+v.Name] = v.Mounted
		}
		want := map[string]bool{PluginEmptyDir + "/disk": false, PluginEmptyDir + "/mem": true, PluginConfigMap + "/cfg": false, PluginSecret + "/sec": true}
		if len(mounted) != len(want) {
			t.Errorf("pod %s volumes %v, want %v", p.UID, mounted, want)
		}
		for k, v := range want {
			if m, ok := mounted[k]; !ok || m != v {
				t.Errorf("pod %s volume %s mounted=%v (found %v), want %v", p.UID, k, m, ok, v)
			}
		}
		if want := filepath.Join(e.root, "pods", string(p.UID), "volume-subpaths", "sec", "app", "0"); !slices.Equal(p.SubPathMounts, []string{want}) {
			t.Errorf("pod %s subPath mounts %v, want [%s]", p.UID, p.SubPathMounts, want)
		}
	}

	// SetUp of a running pod after the restart mounts nothing twice.
	before := len(podMounts(t, e.root, "uid-kept"))
	ms, err := restarted.SetUp(ctx, kept)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Container(&kept.Spec.Containers[0], nil); err != nil {
		t.Fatal(err)
	}
	if after := len(podMounts(t, e.root, "uid-kept")); after != before {
		t.Errorf("mounts under the kept pod went from %d to %d after SetUp by the restarted agent", before, after)
	}

	// The deleted pod's volumes are cleaned up; the kept pod's stay.
	cleaned, err := restarted.CleanupOrphans(ctx, []types.UID{"uid-kept"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cleaned, []types.UID{"uid-gone"}) {
		t.Errorf("CleanupOrphans cleaned %v, want [uid-gone]", cleaned)
	}
	if left := podMounts(t, e.root, "uid-gone"); len(left) != 0 {
		t.Errorf("orphan's mounts left: %+v", left)
	}
	if n := len(podMounts(t, e.root, "uid-kept")); n != before {
		t.Errorf("kept pod has %d mounts after CleanupOrphans, want %d", n, before)
	}
	// Nothing left to clean the second time.
	if cleaned, err := restarted.CleanupOrphans(ctx, []types.UID{"uid-kept"}); err != nil || len(cleaned) != 0 {
		t.Errorf("second CleanupOrphans = %v, %v; want nothing", cleaned, err)
	}
	if err := restarted.TearDown(ctx, kept.UID); err != nil {
		t.Fatal(err)
	}
}
