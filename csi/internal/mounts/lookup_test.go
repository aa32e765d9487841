package mounts_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"berth/csi/internal/csitest"
	"berth/csi/internal/mounts"
)

// TestLookupAndUnmountThroughASymlink: Find, IsMountPoint and Under see the
// kernel's paths through a symlinked dir, Find picks the topmost of stacked
// mounts, Under lists parents first, and unmounting in reverse clears it all.
func TestLookupAndUnmountThroughASymlink(t *testing.T) {
	csitest.RequireMounts(t)
	real := t.TempDir()
	csitest.CheckNoMounts(t, real)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(real, "a"), filepath.Join(real, "a", "b")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, size := range []string{"size=1m", "size=2m"} { // stacked: the 2m one on top
		if err := unix.Mount("tmpfs", a, "tmpfs", 0, size); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", b, "tmpfs", unix.MS_RDONLY, "size=1m"); err != nil {
		t.Fatal(err)
	}

	m, ok, err := mounts.Find(filepath.Join(link, "a"))
	if err != nil || !ok || m.MountPoint != a || !strings.Contains(m.SuperOptions, "size=2048k") {
		t.Errorf("Find(a via link) = %+v, %v, %v; want the upper (2m) mount at %s", m, ok, err, a)
	}
	m, ok, err = mounts.Find(filepath.Join(link, "a", "b"))
	if err != nil || !ok || m.MountPoint != b || !m.ReadOnly() {
		t.Errorf("Find(b via link) = %+v, %v, %v; want the read-only mount at %s", m, ok, err, b)
	}
	if ok, err := mounts.IsMountPoint(real); err != nil || ok {
		t.Errorf("IsMountPoint(unmounted dir) = %v, %v", ok, err)
	}
	got, err := mounts.Under(link)
	if want := []string{a, a, b}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Under(link) = %v, %v; want %v", got, err, want)
	}
	for i := len(got) - 1; i >= 0; i-- {
		if err := mounts.Unmount(got[i]); err != nil {
			t.Errorf("Unmount(%s): %v", got[i], err)
		}
	}
	if left, err := mounts.Under(real); err != nil || len(left) > 0 {
		t.Errorf("after unmounting in reverse: %v, %v", left, err)
	}
}
