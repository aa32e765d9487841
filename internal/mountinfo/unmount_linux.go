package mountinfo

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"berth/internal/errdefs"
)

// UnmountAll unmounts every mount at or below dir in this process's mount
// namespace, deepest first, the upper of stacked mounts before the lower.
// It follows mount-utils' CleanupMountPoint, applied to a whole tree:
//
//   - nothing mounted there (or dir missing) is success, not an error;
//   - the mount table, not stat(2), says what is mounted, so a corrupted
//     mount (a dead FUSE or NFS server) is unmounted like any other;
//   - a mount that is busy is not detached lazily: MNT_DETACH would hide it
//     while whatever holds it keeps it alive, so it is reported instead;
//   - after unmounting, the table is read again and whatever is still there
//     is an error naming it (wrapping errdefs.ErrConflict).
//
// Symlinks are not followed: dir is compared with the mount table as
// written, and each mount point is unmounted with UMOUNT_NOFOLLOW, so a
// symlink that appears in the tree cannot redirect an unmount elsewhere.
// Unlike CleanupMountPoint it removes no directories; callers remove the
// tree once it is unmounted. dir must be absolute.
func UnmountAll(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("mountinfo: unmount under %q: not an absolute path: %w", dir, errdefs.ErrInvalidArgument)
	}
	var errs []error
	// Each round unmounts what it can. A mount below a stacked one only
	// becomes reachable once the upper mount is gone, so go round again
	// while each round leaves fewer mounts than the one before.
	for previous := -1; ; {
		mounts, err := Read(SelfPath)
		if err != nil {
			return fmt.Errorf("mountinfo: unmount under %s: %w", dir, err)
		}
		left := Under(mounts, dir)
		if len(left) == 0 {
			return nil
		}
		if previous >= 0 && len(left) >= previous {
			points := make([]string, len(left))
			for i, m := range left {
				points[i] = m.MountPoint
			}
			return errors.Join(append(errs, fmt.Errorf("mountinfo: still mounted under %s: %s: %w",
				dir, strings.Join(points, ", "), errdefs.ErrConflict))...)
		}
		previous = len(left)
		errs = errs[:0]
		for _, m := range left {
			if err := unmount(m.MountPoint); err != nil {
				errs = append(errs, err)
			}
		}
	}
}

// unmount unmounts the top mount at path without following a symlink
// there; a path that is no longer a mount point, or no longer exists, is
// already done.
func unmount(path string) error {
	err := unix.Unmount(path, unix.UMOUNT_NOFOLLOW)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("mountinfo: unmount %s: %w", path, err)
}
