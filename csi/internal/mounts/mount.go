package mounts

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// Flags parses mount options (as in a CSI mount capability's mount_flags)
// into mount(2) flags. Only options that are plain flags are accepted; an
// unknown option is an error naming it.
func Flags(options []string) (uintptr, error) {
	var flags uintptr
	for _, o := range options {
		for _, opt := range strings.Split(o, ",") {
			switch strings.TrimSpace(opt) {
			case "", "rw", "defaults":
			case "ro":
				flags |= unix.MS_RDONLY
			case "nosuid":
				flags |= unix.MS_NOSUID
			case "nodev":
				flags |= unix.MS_NODEV
			case "noexec":
				flags |= unix.MS_NOEXEC
			case "noatime":
				flags |= unix.MS_NOATIME
			case "nodiratime":
				flags |= unix.MS_NODIRATIME
			case "relatime":
				flags |= unix.MS_RELATIME
			case "sync":
				flags |= unix.MS_SYNCHRONOUS
			default:
				return 0, fmt.Errorf("mount option %q is not supported (supported: ro, rw, nosuid, nodev, noexec, noatime, nodiratime, relatime, sync)", opt)
			}
		}
	}
	return flags, nil
}

// Bind bind-mounts src at dst. The per-mount flags (read-only, nosuid, …) are
// applied with a remount, since the kernel ignores them on the bind itself.
func Bind(src, dst string, flags uintptr) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s at %s: %w", src, dst, err)
	}
	if flags == 0 {
		return nil
	}
	if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|flags, ""); err != nil {
		_ = unix.Unmount(dst, 0)
		return fmt.Errorf("remount %s with flags %#x: %w", dst, flags, err)
	}
	return nil
}

// Unmount unmounts everything stacked at path; a path that is not a mount
// point is left alone.
func Unmount(path string) error {
	for range 16 {
		mounted, err := IsMountPoint(path)
		if err != nil {
			return err
		}
		if !mounted {
			return nil
		}
		if err := unix.Unmount(Canonical(path), 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	return fmt.Errorf("unmount %s: still mounted after 16 unmounts", path)
}

// MountFS mounts the filesystem of type fstype on device at dst.
func MountFS(device, dst, fstype string, flags uintptr) error {
	if err := unix.Mount(device, dst, fstype, flags, ""); err != nil {
		return fmt.Errorf("mount %s (%s) at %s: %w", device, fstype, dst, err)
	}
	return nil
}

// MakeExt4 formats the file or device at path as ext4 with mkfs.ext4 (e2fsprogs).
func MakeExt4(path string) error {
	bin, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return fmt.Errorf("mkfs.ext4 (package e2fsprogs) is needed for ext4 volumes: %w", err)
	}
	out, err := exec.Command(bin, "-q", "-F", "-m", "0", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4 %s: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Statfs returns the filesystem statistics of the filesystem holding path.
func Statfs(path string) (unix.Statfs_t, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return st, fmt.Errorf("statfs %s: %w", path, err)
	}
	return st, nil
}
