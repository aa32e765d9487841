package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// makeCgroup creates the cgroup name (e.g. "/bbench-kubelet") in every
// hierarchy under /sys/fs/cgroup — the kubelet requires its --cgroup-root
// to exist — with cpuset's cpus and mems copied from the root, as a new
// cpuset cgroup starts empty.
func makeCgroup(name string) error {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		if fi, err := os.Stat(h); err != nil || !fi.IsDir() {
			continue
		}
		dir := filepath.Join(h, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(strings.TrimSpace(string(v))), 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removeCgroup removes the cgroup name and everything below it from every
// hierarchy, deepest first (its processes are gone).
func removeCgroup(name string) error {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	var errs []error
	for _, h := range hierarchies {
		var dirs []string
		err := filepath.WalkDir(filepath.Join(h, name), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, &fs.PathError{Op: "rmdir", Path: dirs[i], Err: err})
			}
		}
	}
	return errors.Join(errs...)
}
