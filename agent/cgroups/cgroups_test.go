package cgroups

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestMountpoints(t *testing.T) {
	info := filepath.Join(t.TempDir(), "mountinfo")
	content := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 23 0:40 / /proc rw - proc proc rw
`
	if err := os.WriteFile(info, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Mountpoints(info)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified"}
	if !slices.Equal(got, want) {
		t.Fatalf("Mountpoints = %v, want %v", got, want)
	}
}

// On a plain directory tree (cgroupfs removes its control files itself;
// here there are none), RemovePod removes the pod's directories children
// first and leaves the rest.
func TestRemovePod(t *testing.T) {
	mount := t.TempDir()
	pod := filepath.Join(mount, "berth-x", "kubepods", "besteffort", "podu1")
	other := filepath.Join(mount, "berth-x", "kubepods", "besteffort", "podu2")
	for _, d := range []string{filepath.Join(pod, "ctr1"), filepath.Join(pod, "ctr2", "nested"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemovePod([]string{mount, filepath.Join(mount, "absent")}, "berth-x", "u1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pod); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("pod cgroup left: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another pod's cgroup removed: %v", err)
	}
	if err := RemovePod([]string{mount}, "berth-x", "u1"); err != nil {
		t.Fatalf("second removal: %v", err)
	}
}

func TestPodDirsFollowTheQoSLayout(t *testing.T) {
	got := PodDirs("", "abc")
	want := []string{"/kubepods/podabc", "/kubepods/burstable/podabc", "/kubepods/besteffort/podabc"}
	if !slices.Equal(got, want) {
		t.Fatalf("PodDirs = %v, want %v", got, want)
	}
}
