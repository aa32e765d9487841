package volumes

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// Permission bits added for fsGroup, as the kubelet's volume ownership
// change does: group read (and write for writable volumes) on everything,
// group execute and setgid on directories.
const (
	rwMask   = fs.FileMode(0o660)
	roMask   = fs.FileMode(0o440)
	execMask = fs.FileMode(0o110)
)

func podFSGroup(pod *v1.Pod) (*int64, *v1.PodFSGroupChangePolicy) {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return nil, nil
	}
	return sc.FSGroup, sc.FSGroupChangePolicy
}

// setOwnership gives the tree at dir to group fsGroup: every entry is
// chowned to the group and gains the group bits (symlinks are left alone).
// With policy OnRootMismatch nothing changes when dir already has the
// group and the bits.
func setOwnership(dir string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	if fsGroup == nil {
		return nil
	}
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch && rootMatches(dir, *fsGroup, readOnly) {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return chownEntry(path, *fsGroup, readOnly)
	})
}

// setOwnershipRoot applies the fsGroup change to dir alone.
func setOwnershipRoot(dir string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	if fsGroup == nil || (policy != nil && *policy == v1.FSGroupChangeOnRootMismatch && rootMatches(dir, *fsGroup, readOnly)) {
		return nil
	}
	return chownEntry(dir, *fsGroup, readOnly)
}

func chownEntry(path string, gid int64, readOnly bool) error {
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if err := os.Lchown(path, -1, int(gid)); err != nil {
		return fmt.Errorf("chown %s to group %d: %w", path, gid, err)
	}
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	if info.IsDir() {
		mask |= execMask | fs.ModeSetgid
	}
	mode := info.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky) | mask
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	return nil
}

func rootMatches(dir string, gid int64, readOnly bool) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := statOf(info)
	if !ok || int64(st.Gid) != gid {
		return false
	}
	mask := rwMask | execMask | fs.ModeSetgid
	if readOnly {
		mask = roMask | execMask | fs.ModeSetgid
	}
	return info.Mode()&mask == mask
}
