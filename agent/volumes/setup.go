package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/volumes/atomic"
	"berth/internal/errdefs"
	"berth/internal/mountinfo"
)

// Plugin directory names under <pod>/volumes, as the kubelet names them.
const (
	PluginEmptyDir    = "kubernetes.io~empty-dir"
	PluginConfigMap   = "kubernetes.io~configmap"
	PluginSecret      = "kubernetes.io~secret"
	PluginDownwardAPI = "kubernetes.io~downward-api"
	PluginProjected   = "kubernetes.io~projected"
)

// kind is what the manager needs to know of a volume type.
type kind struct {
	plugin string // directory under <pod>/volumes; "" for none (hostPath)
	atomic bool   // written with the atomic writer, updated by Resync
	memory bool   // kept on a tmpfs
}

func kindOf(vol *v1.Volume) kind {
	switch {
	case vol.EmptyDir != nil:
		return kind{plugin: PluginEmptyDir, memory: vol.EmptyDir.Medium == v1.StorageMediumMemory}
	case vol.ConfigMap != nil:
		return kind{plugin: PluginConfigMap, atomic: true}
	case vol.Secret != nil:
		return kind{plugin: PluginSecret, atomic: true, memory: true}
	case vol.DownwardAPI != nil:
		return kind{plugin: PluginDownwardAPI, atomic: true}
	case vol.Projected != nil:
		return kind{plugin: PluginProjected, atomic: true, memory: true}
	}
	return kind{}
}

// mountedVolume is a set-up volume: where it is on the host and whether
// containers must get it read-only whatever their volumeMount says.
type mountedVolume struct {
	path     string
	readOnly bool
}

func (m *Manager) podDir(uid types.UID) string {
	return filepath.Join(m.root, "pods", string(uid))
}

func (m *Manager) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(m.podDir(uid), "volumes", plugin, name)
}

// isSetUp reports whether an atomically written volume has content.
func isSetUp(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, atomic.DataDirName))
	return err == nil
}

// setUpVolume sets vol up. An atomically written volume that has content
// already is only rewritten when refresh is set (Resync).
func (m *Manager) setUpVolume(ctx context.Context, pod *v1.Pod, vol *v1.Volume, refresh bool) (mountedVolume, error) {
	if vol.Name == "" || vol.Name == "." || vol.Name == ".." || filepath.Base(vol.Name) != vol.Name {
		return mountedVolume{}, fmt.Errorf("volume name %q is not a valid directory name: %w", vol.Name, errdefs.ErrInvalidArgument)
	}
	switch {
	case vol.HostPath != nil:
		if err := checkHostPath(vol.HostPath); err != nil {
			return mountedVolume{}, err
		}
		return mountedVolume{path: vol.HostPath.Path}, nil
	case vol.EmptyDir != nil:
		return m.setUpEmptyDir(pod, vol)
	case isCSI(vol):
		return m.setUpCSI(ctx, pod, vol) // csi.go
	}
	k := kindOf(vol)
	if !k.atomic {
		return mountedVolume{}, fmt.Errorf("volume %q: %s: %w", vol.Name, unsupportedType(vol), errdefs.ErrUnimplemented)
	}
	dir := m.volumeDir(pod.UID, k.plugin, vol.Name)
	fresh := !isSetUp(dir)
	if !fresh && !refresh {
		return mountedVolume{path: dir, readOnly: true}, nil
	}
	// Read the objects first: a missing one leaves nothing on disk.
	payload, err := m.payload(ctx, pod, vol)
	if err != nil {
		return mountedVolume{}, err
	}
	if err := m.writePayload(pod, dir, k, payload); err != nil {
		if fresh {
			if terr := m.tearDownTree(dir); terr != nil {
				err = fmt.Errorf("%w (and cleaning up: %v)", err, terr)
			}
		}
		return mountedVolume{}, err
	}
	return mountedVolume{path: dir, readOnly: true}, nil
}

func (m *Manager) payload(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (map[string]atomic.File, error) {
	switch {
	case vol.ConfigMap != nil:
		s := vol.ConfigMap
		return m.configMapPayload(ctx, pod, s.Name, s.Items, s.Optional, modeOr(s.DefaultMode, v1.ConfigMapVolumeSourceDefaultMode))
	case vol.Secret != nil:
		s := vol.Secret
		return m.secretPayload(ctx, pod, s.SecretName, s.Items, s.Optional, modeOr(s.DefaultMode, v1.SecretVolumeSourceDefaultMode))
	case vol.DownwardAPI != nil:
		return m.downwardAPIPayload(pod, vol.DownwardAPI.Items, modeOr(vol.DownwardAPI.DefaultMode, v1.DownwardAPIVolumeSourceDefaultMode))
	default:
		return m.projectedPayload(ctx, pod, vol.Projected)
	}
}

// writePayload prepares the volume directory (a tmpfs for memory kinds)
// and writes payload into it atomically.
func (m *Manager) writePayload(pod *v1.Pod, dir string, k kind, payload map[string]atomic.File) error {
	var size int64
	if k.memory {
		size = memoryVolumeSize(pod, nil, m.cfg.NodeAllocatable)
	}
	if err := m.prepareDir(dir, k.memory, size); err != nil {
		return err
	}
	if err := makeNestedMountpoints(pod, filepath.Base(dir), dir); err != nil {
		return err
	}
	w, err := atomic.NewWriter(dir, m.cfg.Clock)
	if err != nil {
		return err
	}
	fsGroup, policy := podFSGroup(pod)
	_, err = w.Write(payload, func(tsDir string) error {
		if fsGroup == nil {
			return nil
		}
		if err := setOwnership(tsDir, fsGroup, nil, true); err != nil {
			return err
		}
		return setOwnershipRoot(dir, fsGroup, policy, true)
	})
	return err
}

// prepareDir makes dir (mode 0777, as the kubelet's emptyDir wrapper does)
// and, for memory volumes, mounts a tmpfs there unless one is mounted.
func (m *Manager) prepareDir(dir string, memory bool, size int64) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s exists and is not a directory: %w", dir, errdefs.ErrConflict)
	}
	if memory {
		mounts, err := mountinfo.Read(mountinfo.SelfPath)
		if err != nil {
			return fmt.Errorf("read mount table: %w", err)
		}
		if !mountinfo.IsMountPoint(mounts, dir) {
			if err := mountTmpfs(dir, size); err != nil {
				return err
			}
			m.cfg.Logger.Debug("mounted tmpfs", "dir", dir, "size", size)
		}
	}
	info, err = os.Stat(dir)
	if err != nil {
		return err
	}
	if info.Mode().Perm() != 0o777 {
		if err := os.Chmod(dir, info.Mode()|0o777); err != nil {
			return fmt.Errorf("chmod %s: %w", dir, err)
		}
	}
	return nil
}

func (m *Manager) setUpEmptyDir(pod *v1.Pod, vol *v1.Volume) (mountedVolume, error) {
	src := vol.EmptyDir
	var memory bool
	switch src.Medium {
	case v1.StorageMediumDefault:
	case v1.StorageMediumMemory:
		memory = true
	default:
		return mountedVolume{}, fmt.Errorf("emptyDir medium %q: not supported by berth's agent: %w", src.Medium, errdefs.ErrUnimplemented)
	}
	dir := m.volumeDir(pod.UID, PluginEmptyDir, vol.Name)
	_, statErr := os.Lstat(dir)
	fresh := errors.Is(statErr, fs.ErrNotExist)
	var size int64
	if memory {
		size = memoryVolumeSize(pod, src.SizeLimit, m.cfg.NodeAllocatable)
	}
	if err := m.prepareDir(dir, memory, size); err != nil {
		if fresh {
			_ = m.tearDownTree(dir)
		}
		return mountedVolume{}, err
	}
	if fresh {
		if fsGroup, policy := podFSGroup(pod); fsGroup != nil {
			if err := setOwnership(dir, fsGroup, policy, false); err != nil {
				_ = m.tearDownTree(dir)
				return mountedVolume{}, err
			}
		}
	}
	return mountedVolume{path: dir}, nil
}

// makeNestedMountpoints creates, in the read-only volume at dir, the
// directories where containers mount other volumes below this volume's
// mount path (the runtime could not create them in a read-only mount), as
// the kubelet does.
func makeNestedMountpoints(pod *v1.Pod, volume, dir string) error {
	all := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for _, own := range c.VolumeMounts {
			if own.Name != volume || own.SubPath != "" || own.SubPathExpr != "" {
				continue
			}
			parent := filepath.Clean(own.MountPath) + "/"
			for _, other := range c.VolumeMounts {
				rel, ok := strings.CutPrefix(filepath.Clean(other.MountPath), parent)
				if !ok || rel == "" {
					continue
				}
				if err := checkSubPath(rel); err != nil || strings.HasPrefix(rel, "..") {
					return fmt.Errorf("nested mount point %q of container %q in volume %q: must not contain '..': %w", other.MountPath, c.Name, volume, errdefs.ErrInvalidArgument)
				}
				if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
					return fmt.Errorf("create nested mount point %s: %w", rel, err)
				}
			}
		}
	}
	return nil
}

func modeOr(p *int32, def int32) int32 {
	if p != nil {
		return *p
	}
	return def
}

func unsupportedType(vol *v1.Volume) string {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim volumes are not supported by this volume manager"
	case vol.CSI != nil:
		return "csi volumes are not supported by this volume manager"
	case vol.Ephemeral != nil:
		return "ephemeral volumes are not supported by this volume manager"
	case vol.Image != nil:
		return "image volumes are not supported by this volume manager"
	}
	return "volume type not supported by berth's agent"
}
