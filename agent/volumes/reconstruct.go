package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"berth/internal/mountinfo"
)

// PodVolumes is what a pod has on disk under <root>/pods/<uid>.
type PodVolumes struct {
	// UID is the pod's UID (its directory name).
	UID types.UID
	// Volumes are the volume directories, sorted by plugin and name.
	Volumes []VolumeState
	// SubPathMounts are the subPath bind mounts still mounted
	// (<pod>/volume-subpaths/<volume>/<container>/<index>).
	SubPathMounts []string
}

// VolumeState is one volume directory found on disk.
type VolumeState struct {
	// Plugin is the plugin directory, e.g. "kubernetes.io~secret".
	Plugin string
	// Name is the pod volume's name.
	Name string
	// Path is the volume's directory.
	Path string
	// Mounted reports whether a filesystem (tmpfs) is mounted there.
	Mounted bool
}

// Reconstruct finds, after an agent restart, the pods that have volumes
// under <root>/pods and what of them is mounted (from
// /proc/self/mountinfo). The manager keeps no state of its own across
// restarts: SetUp sees mounted tmpfs volumes and subPath bind mounts and
// reuses them instead of mounting again, and TearDown / CleanupOrphans
// unmount what is found here.
func (m *Manager) Reconstruct(ctx context.Context) ([]PodVolumes, error) {
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		return nil, fmt.Errorf("volumes: read mount table: %w", err)
	}
	podsDir := filepath.Join(m.root, "pods")
	entries, err := os.ReadDir(podsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("volumes: list %s: %w", podsDir, err)
	}
	var out []PodVolumes
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !e.IsDir() {
			continue
		}
		uid := types.UID(e.Name())
		pv := PodVolumes{UID: uid}
		volsDir := filepath.Join(podsDir, e.Name(), "volumes")
		plugins, _ := os.ReadDir(volsDir)
		for _, p := range plugins {
			if !p.IsDir() {
				continue
			}
			names, _ := os.ReadDir(filepath.Join(volsDir, p.Name()))
			for _, n := range names {
				path := filepath.Join(volsDir, p.Name(), n.Name())
				pv.Volumes = append(pv.Volumes, VolumeState{Plugin: p.Name(), Name: n.Name(), Path: path, Mounted: mountinfo.IsMountPoint(mounts, path)})
			}
		}
		for _, mnt := range mountinfo.Under(mounts, filepath.Join(podsDir, e.Name(), "volume-subpaths")) {
			pv.SubPathMounts = append(pv.SubPathMounts, mnt.MountPoint)
		}
		slices.Sort(pv.SubPathMounts)
		if len(pv.Volumes) == 0 && len(pv.SubPathMounts) == 0 && !exists(volsDir) && !exists(filepath.Join(podsDir, e.Name(), "volume-subpaths")) {
			continue
		}
		m.cfg.Logger.Debug("pod volumes on disk", "uid", uid, "volumes", len(pv.Volumes), "subPathMounts", len(pv.SubPathMounts))
		out = append(out, pv)
	}
	return out, nil
}

// CleanupOrphans tears down the volumes of every pod found on disk whose
// UID is not in active (pods deleted while the agent was down, or whose
// teardown failed before), then unstages the CSI volumes still staged that
// no pod has published (an unstage that failed, or an agent stopped,
// after the last pod's unpublish), and returns the UIDs it cleaned up.
// Call it once the agent knows all its pods, and periodically.
func (m *Manager) CleanupOrphans(ctx context.Context, active []types.UID) ([]types.UID, error) {
	pods, err := m.Reconstruct(ctx)
	if err != nil {
		return nil, err
	}
	var cleaned []types.UID
	var errs []error
	for _, p := range pods {
		if slices.Contains(active, p.UID) || !validUID(p.UID) {
			continue
		}
		if err := m.TearDown(ctx, p.UID); err != nil {
			errs = append(errs, err)
			continue
		}
		m.cfg.Logger.Info("orphaned pod volumes cleaned up", "uid", p.UID)
		cleaned = append(cleaned, p.UID)
	}
	if err := m.cleanupUnusedStaging(ctx); err != nil {
		errs = append(errs, fmt.Errorf("volumes: unstage unused CSI volumes: %w", err))
	}
	return cleaned, errors.Join(errs...)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
