// Package mounts holds the Linux mount primitives the CSI packages share:
// looking mounts up (through berth/internal/mountinfo), bind mounts,
// unmounting, and loop devices.
package mounts

import (
	"path/filepath"
	"slices"

	"berth/internal/mountinfo"
)

// Info is one mount of /proc/self/mountinfo.
type Info = mountinfo.Mount

// Canonical resolves symlinks in path where it exists, so it compares equal
// to the mount points the kernel reports.
func Canonical(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return filepath.Clean(path)
}

// Find returns the topmost mount at path, if any.
func Find(path string) (Info, bool, error) {
	all, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		return Info{}, false, err
	}
	path = Canonical(path)
	if m := mountinfo.Containing(all, path); m != nil && m.MountPoint == path {
		return *m, true, nil
	}
	return Info{}, false, nil
}

// IsMountPoint reports whether something is mounted at path.
func IsMountPoint(path string) (bool, error) {
	_, ok, err := Find(path)
	return ok, err
}

// Under returns the mount points at or below dir, parents before what is
// mounted on them (so unmount them in reverse order).
func Under(dir string) ([]string, error) {
	all, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mountinfo.Under(all, Canonical(dir)) {
		out = append(out, m.MountPoint)
	}
	slices.Reverse(out) // mountinfo.Under lists deepest first
	return out, nil
}
