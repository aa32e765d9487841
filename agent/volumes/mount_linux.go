package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"

	"berth/internal/mountinfo"
)

// mountTmpfs mounts a tmpfs at dir, limited to size bytes when size > 0.
func mountTmpfs(dir string, size int64) error {
	var data string
	if size > 0 {
		data = fmt.Sprintf("size=%d", size)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, data); err != nil {
		return fmt.Errorf("mount tmpfs at %s (%s): %w", dir, data, err)
	}
	return nil
}

// bindMount bind-mounts src at target.
func bindMount(src, target string) error {
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s at %s: %w", src, target, err)
	}
	return nil
}

// unmount unmounts the filesystem at path; nothing mounted there is fine.
func unmount(path string) error {
	err := unix.Unmount(path, 0)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", path, err)
}

func statOf(info fs.FileInfo) (*syscall.Stat_t, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	return st, ok
}

// makeRShared makes path a mount point (a bind mount onto itself, when it
// is not one) and the root of a recursively shared subtree, unless the mount
// it is on is shared already.
func makeRShared(path string) (changed bool, err error) {
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		return false, fmt.Errorf("read mount table: %w", err)
	}
	if m := mountinfo.Containing(mounts, path); m != nil && m.Shared() {
		return false, nil
	}
	if !mountinfo.IsMountPoint(mounts, path) {
		if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return false, fmt.Errorf("bind mount %s onto itself: %w", path, err)
		}
	}
	if err := unix.Mount("", path, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return true, fmt.Errorf("make %s rshared: %w", path, err)
	}
	return true, nil
}
