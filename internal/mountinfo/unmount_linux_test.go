package mountinfo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"berth/internal/errdefs"
	"berth/internal/prereq"
)

// requireRoot fails (CI=true) or skips a test that needs to mount.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	prereq.Missing(t, "mountinfo: tests that mount need root")
}

// scratch returns a temp dir whose leftover mounts are detached at the end
// of the test (after failing it), so a broken UnmountAll leaves nothing
// behind.
func scratch(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		mounts, err := Read(SelfPath)
		if err != nil {
			t.Error(err)
			return
		}
		for _, m := range Under(mounts, dir) {
			t.Errorf("still mounted after the test: %s", m.MountPoint)
			_ = unix.Unmount(m.MountPoint, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		}
	})
	return dir
}

func mountTmpfs(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs at %s: %v", dir, err)
	}
}

func mountedUnder(t *testing.T, dir string) []string {
	t.Helper()
	mounts, err := Read(SelfPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range Under(mounts, dir) {
		out = append(out, m.MountPoint)
	}
	return out
}

// TestUnmountAllNestedStackedAndSymlinked: a mount hidden below a stacked
// one is reached in a later round, and a symlink where a listed mount
// point used to be is not followed out of the tree.
func TestUnmountAllNestedStackedAndSymlinked(t *testing.T) {
	requireRoot(t)
	dir, outside := scratch(t), scratch(t)
	a := filepath.Join(dir, "a")
	mountTmpfs(t, a)                     // X at a
	mountTmpfs(t, filepath.Join(a, "b")) // Y at a/b, on X
	mountTmpfs(t, a)                     // Z stacked on a, hiding Y
	victim := filepath.Join(outside, "m")
	mountTmpfs(t, victim)
	// In Z, a/b is a symlink to a mount outside dir.
	if err := os.Symlink(victim, filepath.Join(a, "b")); err != nil {
		t.Fatal(err)
	}
	sibling := dir + "x" // shares dir's name as a prefix, not its tree
	mountTmpfs(t, sibling)
	t.Cleanup(func() { _ = unix.Unmount(sibling, 0); _ = os.Remove(sibling) })

	if err := UnmountAll(dir); err != nil {
		t.Fatalf("UnmountAll: %v", err)
	}
	if left := mountedUnder(t, dir); len(left) > 0 {
		t.Errorf("left mounted: %v", left)
	}
	if got := mountedUnder(t, victim); len(got) != 1 {
		t.Errorf("mounts at the symlink's target outside the tree = %v, want it still mounted", got)
	}
	if got := mountedUnder(t, sibling); len(got) != 1 {
		t.Errorf("mounts at sibling %s = %v, want it still mounted", sibling, got)
	}
	if err := UnmountAll(outside); err != nil {
		t.Fatalf("UnmountAll(outside): %v", err)
	}
}

// TestUnmountAllBusyIsReportedNotDetached: a busy mount stays mounted and
// is named in the error; once released, a second call unmounts it.
func TestUnmountAllBusyIsReportedNotDetached(t *testing.T) {
	requireRoot(t)
	dir := scratch(t)
	busy := filepath.Join(dir, "busy")
	mountTmpfs(t, busy)
	mountTmpfs(t, filepath.Join(dir, "free"))
	f, err := os.Create(filepath.Join(busy, "open"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	err = UnmountAll(dir)
	if !errors.Is(err, unix.EBUSY) || !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("UnmountAll with an open file = %v, want EBUSY and ErrConflict", err)
	}
	if left := mountedUnder(t, dir); len(left) != 1 || left[0] != busy {
		t.Errorf("left mounted %v, want only %s (not detached lazily)", left, busy)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := UnmountAll(dir); err != nil {
		t.Fatalf("UnmountAll after release: %v", err)
	}
	if left := mountedUnder(t, dir); len(left) > 0 {
		t.Errorf("left mounted: %v", left)
	}
}

func TestUnmountAllNothingMounted(t *testing.T) {
	if err := UnmountAll(filepath.Join(t.TempDir(), "missing")); err != nil {
		t.Errorf("UnmountAll(missing dir) = %v, want nil", err)
	}
	for _, dir := range []string{"", "relative/dir"} {
		if err := UnmountAll(dir); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("UnmountAll(%q) = %v, want ErrInvalidArgument", dir, err)
		}
	}
}
