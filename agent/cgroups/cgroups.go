// Package cgroups removes a pod's cgroups once the pod is gone. The runtime
// removes each container's own cgroup, but the pod-level parents the
// kubelet's layout implies (<cgroup-root>/kubepods[/burstable|/besteffort]/pod<uid>,
// created by runc on the way) stay in every hierarchy unless someone removes
// them.
package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/types"
)

// Mountpoints lists the mount points of the cgroup hierarchies (v1 and v2)
// in mountinfo (normally /proc/self/mountinfo).
func Mountpoints(mountinfo string) ([]string, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "<id> <parent> <maj:min> <root> <mountpoint> <opts> ... - <fstype> <source> <superopts>"
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if t := fields[sep+1]; t == "cgroup" || t == "cgroup2" {
			out = append(out, fields[4])
		}
	}
	return out, sc.Err()
}

// PodDirs are the cgroup paths (relative to a hierarchy's mount point) a pod
// with uid may have under cgroupRoot, one per QoS class.
func PodDirs(cgroupRoot string, uid types.UID) []string {
	base := filepath.Join("/", cgroupRoot, "kubepods")
	pod := "pod" + string(uid)
	return []string{
		filepath.Join(base, pod),
		filepath.Join(base, "burstable", pod),
		filepath.Join(base, "besteffort", pod),
	}
}

// RemovePod removes the pod's cgroups under cgroupRoot in every hierarchy
// mounted at mounts, children first (cgroup directories go with rmdir only).
// Absent ones are fine; one still holding a process is an error.
func RemovePod(mounts []string, cgroupRoot string, uid types.UID) error {
	var errs []error
	for _, m := range mounts {
		for _, rel := range PodDirs(cgroupRoot, uid) {
			errs = append(errs, removeTree(filepath.Join(m, rel)))
		}
	}
	return errors.Join(errs...)
}

func removeTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("remove cgroup %s: %w", dirs[i], err)
		}
	}
	return nil
}
