package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"

	"berth/internal/errdefs"
	"berth/internal/mountinfo"
)

// TearDown unmounts and removes the pod's volumes: first its subPath bind
// mounts (<pod>/volume-subpaths), then its CSI volumes through their
// drivers (unpublished, and unstaged when no other pod uses them; see
// csi.go), then every mount under its volume directories (tmpfs), then the
// directories. It is idempotent and safe for
// a pod whose SetUp never ran or failed half way; deletion never crosses
// into a filesystem still mounted and never follows symlinks, so nothing
// outside the pod directory is touched. hostPath volumes are not under the
// pod directory and are left alone. The pod directory itself stays (its
// other files belong to the agent).
func (m *Manager) TearDown(ctx context.Context, podUID types.UID) error {
	if !validUID(podUID) {
		return fmt.Errorf("volumes: pod uid %q is not a valid directory name: %w", podUID, errdefs.ErrInvalidArgument)
	}
	defer m.lockPod(podUID)()
	m.tokens.forget(podUID)
	m.forgetBackOff(string(podUID))
	podDir := m.podDir(podUID)
	var errs []error
	for _, sub := range []string{"volume-subpaths", "volumes"} {
		if sub == "volumes" {
			// CSI volumes through their drivers first (csi.go): never
			// unmounted behind a driver's back.
			if err := m.tearDownCSI(ctx, podUID); err != nil {
				errs = append(errs, err)
				break
			}
		}
		if err := m.tearDownTree(filepath.Join(podDir, sub)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("volumes: tear down pod %s: %w", podUID, err)
	}
	m.cfg.Logger.Debug("pod volumes torn down", "uid", podUID)
	return nil
}

// tearDownTree unmounts everything mounted at or under dir, deepest first,
// checks that nothing is left mounted there, and removes dir.
func (m *Manager) tearDownTree(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		return fmt.Errorf("read mount table: %w", err)
	}
	var errs []error
	for _, mnt := range mountinfo.Under(mounts, dir) {
		if err := unmount(mnt.MountPoint); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if mounts, err = mountinfo.Read(mountinfo.SelfPath); err != nil {
		return fmt.Errorf("read mount table: %w", err)
	}
	if left := mountinfo.Under(mounts, dir); len(left) > 0 {
		return fmt.Errorf("%s is still mounted after unmounting; not removing %s: %w", left[0].MountPoint, dir, errdefs.ErrConflict)
	}
	return removeTree(dir)
}

// removeTree removes dir and everything below it without following
// symlinks (they are removed themselves) and refusing to descend into a
// directory on another device (a mount point).
func removeTree(dir string) error {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return os.Remove(dir)
	}
	st, ok := statOf(info)
	if !ok {
		return fmt.Errorf("stat %s: no device information", dir)
	}
	return removeDir(dir, st.Dev)
}

func removeDir(dir string, dev uint64) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() { // includes symlinks, whatever they point at
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := statOf(info)
		if !ok || st.Dev != dev {
			return fmt.Errorf("%s is on another filesystem (a mount point); not removing it: %w", p, errdefs.ErrConflict)
		}
		if err := removeDir(p, dev); err != nil {
			return err
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
