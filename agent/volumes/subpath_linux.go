package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"berth/internal/errdefs"
	"berth/internal/mountinfo"
)

// prepareSubPath bind-mounts subPath of the volume at volPath to the
// container's subpath target and returns the target. The subPath is
// resolved (symlinks within the volume are fine), must stay within the
// volume, and is then opened component by component without following
// symlinks, so a symlink swapped in meanwhile cannot redirect the mount.
func (m *Manager) prepareSubPath(uid types.UID, volume, container string, index int, volPath, subPath string) (string, error) {
	target := filepath.Join(m.podDir(uid), "volume-subpaths", volume, container, strconv.Itoa(index))
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		return "", fmt.Errorf("read mount table: %w", err)
	}
	if mountinfo.IsMountPoint(mounts, target) {
		return target, nil // bound when the container first started
	}
	base, err := filepath.EvalSymlinks(volPath)
	if err != nil {
		return "", fmt.Errorf("resolve volume path: %w", err)
	}
	full := filepath.Join(base, subPath)
	if _, err := os.Stat(full); errors.Is(err, fs.ErrNotExist) {
		if err := safeMkdirAll(base, subPath); err != nil {
			return "", err
		}
	}
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("resolve: %w", err)
	}
	rel, ok := within(base, resolved)
	if !ok {
		return "", fmt.Errorf("resolves to %s, outside the volume: %w", resolved, errdefs.ErrInvalidArgument)
	}
	fd, err := safeOpen(base, rel)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("stat: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(target), err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		err = os.Mkdir(target, 0o750)
	} else {
		var f *os.File
		f, err = os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o640)
		if err == nil {
			err = f.Close()
		}
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create bind target %s: %w", target, err)
	}
	if err := bindMount(fmt.Sprintf("/proc/self/fd/%d", fd), target); err != nil {
		return "", err
	}
	m.cfg.Logger.Debug("subPath bound", "uid", uid, "volume", volume, "container", container, "index", index, "source", resolved, "target", target)
	return target, nil
}

// within reports whether p is base or below it, and p relative to base.
func within(base, p string) (string, bool) {
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// safeOpen opens base/rel with O_PATH, one component at a time, refusing
// any symlink on the way.
func safeOpen(base, rel string) (int, error) {
	fd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", base, err)
	}
	if rel == "." {
		return fd, nil
	}
	cur := base
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." {
			continue
		}
		cur = filepath.Join(cur, seg)
		next, err := unix.Openat(fd, seg, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", cur, err)
		}
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("stat %s: %w", cur, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			return -1, fmt.Errorf("symlink %s not allowed: %w", cur, errdefs.ErrInvalidArgument)
		}
	}
	return fd, nil
}

// safeMkdirAll creates the missing directories of base/rel with the
// volume root's permissions. The part that exists must resolve within
// base; the new directories are made relative to a file descriptor opened
// without following symlinks.
func safeMkdirAll(base, rel string) error {
	info, err := os.Stat(base)
	if err != nil {
		return err
	}
	perm := uint32(info.Mode().Perm())
	existing := filepath.Join(base, rel)
	var missing []string
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		missing = append([]string{filepath.Base(existing)}, missing...)
		existing = filepath.Dir(existing)
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", existing, err)
	}
	prefix, ok := within(base, resolved)
	if !ok {
		return fmt.Errorf("resolves to %s, outside the volume: %w", resolved, errdefs.ErrInvalidArgument)
	}
	fd, err := safeOpen(base, prefix)
	if err != nil {
		return err
	}
	defer func() { unix.Close(fd) }()
	for _, seg := range missing {
		if err := unix.Mkdirat(fd, seg, perm); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create directory %s: %w", seg, err)
		}
		next, err := unix.Openat(fd, seg, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open new directory %s: %w", seg, err)
		}
		unix.Close(fd)
		fd = next
	}
	return nil
}
