package volumes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/internal/errdefs"
)

func TestNewValidatesConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no root", Config{}, "Config.RootDir is required"},
		{"relative root", Config{RootDir: "var/lib/berth"}, "must be an absolute path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.cfg)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New = %v, want ErrInvalidArgument containing %q", err, c.want)
			}
		})
	}
}

func TestSetUpRejectsBadPods(t *testing.T) {
	e := newTestEnv(t)
	for _, pod := range []*v1.Pod{nil, testPod("", nil), testPod("../x", nil)} {
		if _, err := e.mgr.SetUp(ctx, pod); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("SetUp(%v) = %v, want ErrInvalidArgument", pod, err)
		}
	}
	if err := e.mgr.TearDown(ctx, "../.."); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("TearDown(../..) = %v, want ErrInvalidArgument", err)
	}
}

func TestEmptyDirOnDisk(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("uid-ed", []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}})
	ms, err := e.mgr.SetUp(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.root, "pods", "uid-ed", "volumes", "kubernetes.io~empty-dir", "scratch")
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() || info.Mode().Perm() != 0o777 {
		t.Fatalf("emptyDir %s: %v %v, want a 0777 directory", dir, info, err)
	}
	if len(mountsAt(t, dir)) != 0 {
		t.Errorf("disk emptyDir is a mount point")
	}
	if err := os.WriteFile(filepath.Join(dir, "kept"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// SetUp again keeps the content.
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kept")); err != nil {
		t.Errorf("second SetUp lost the volume's content: %v", err)
	}
	mounts, err := ms.Container(&pod.Spec.Containers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.Mount{ContainerPath: "/scratch", HostPath: dir, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE}
	if len(mounts) != 1 || mounts[0].String() != want.String() {
		t.Errorf("mounts = %v, want [%v]", mounts, want)
	}
	if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("emptyDir still there after TearDown: %v", err)
	}
}

func TestEmptyDirMemory(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		name      string
		sizeLimit string
		podLimit  string
		wantSize  string // in mountinfo's super options
	}{
		{"sizeLimit", "64Mi", "", "size=65536k"},
		{"pod limit lower than sizeLimit", "64Mi", "32Mi", "size=32768k"},
		{"no sizeLimit: node allocatable", "", "", "size=8388608k"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}
			if c.sizeLimit != "" {
				src.SizeLimit = ptr(resource.MustParse(c.sizeLimit))
			}
			ctr := v1.Container{Name: "app"}
			if c.podLimit != "" {
				ctr.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(c.podLimit)}
			}
			uid := "uid-mem-" + strings.ReplaceAll(c.name, " ", "-")
			pod := testPod(uid, []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: src}}}, ctr)
			if _, err := e.mgr.SetUp(ctx, pod); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(e.root, "pods", uid, "volumes", "kubernetes.io~empty-dir", "cache")
			ms := mountsAt(t, dir)
			if len(ms) != 1 || ms[0].FSType != "tmpfs" || !strings.Contains(ms[0].SuperOptions, c.wantSize) {
				t.Fatalf("mounts at %s: %+v, want one tmpfs with %s", dir, ms, c.wantSize)
			}
			if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o777 {
				t.Errorf("tmpfs root mode %v (%v), want 0777", info.Mode().Perm(), err)
			}
			// Idempotent: no second mount.
			if _, err := e.mgr.SetUp(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if n := len(mountsAt(t, dir)); n != 1 {
				t.Errorf("%d mounts after the second SetUp, want 1", n)
			}
			if err := e.mgr.TearDown(ctx, pod.UID); err != nil {
				t.Fatal(err)
			}
			if n := len(mountsAt(t, dir)); n != 0 {
				t.Errorf("%d mounts after TearDown", n)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("volume dir after TearDown: %v", err)
			}
		})
	}
}

func TestEmptyDirHugePagesUnsupported(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("uid-huge", []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}}})
	_, err := e.mgr.SetUp(ctx, pod)
	var me *MountError
	if !errors.As(err, &me) || me.Volume != "h" || !errors.Is(err, errdefs.ErrUnimplemented) {
		t.Fatalf("SetUp = %v, want a MountError for h wrapping ErrUnimplemented", err)
	}
}

func TestEmptyDirFSGroup(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("uid-fsg", []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}})
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(4321))}
	if _, err := e.mgr.SetUp(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mgr.TearDown(ctx, pod.UID) })
	dir := filepath.Join(e.root, "pods", "uid-fsg", "volumes", "kubernetes.io~empty-dir", "data")
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := statOf(info)
	if st.Gid != 4321 || info.Mode()&os.ModeSetgid == 0 {
		t.Errorf("emptyDir gid %d mode %v, want gid 4321 with setgid", st.Gid, info.Mode())
	}
}
