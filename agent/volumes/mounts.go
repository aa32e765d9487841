package volumes

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/internal/errdefs"
	"berth/internal/expansion"
)

// Mounts are a pod's set-up volumes, ready to be mounted into its
// containers. Get one from Manager.SetUp.
type Mounts struct {
	m       *Manager
	pod     *v1.Pod
	volumes map[string]mountedVolume
}

// HostPath returns where the named volume is on the host.
func (ms *Mounts) HostPath(volume string) (string, bool) {
	v, ok := ms.volumes[volume]
	return v.path, ok
}

// Container returns the CRI mounts for c, one of the pod's (init,
// regular or ephemeral) containers, in volumeMounts order — as the kubelet
// computes them when it creates the container:
//   - readonly when the volumeMount says so or the volume is a configMap,
//     secret, downwardAPI or projected volume; recursive_read_only per
//     recursiveReadOnly and Config.RecursiveReadOnly;
//   - mountPropagation None (or unset) → PRIVATE, HostToContainer →
//     HOST_TO_CONTAINER, Bidirectional → BIDIRECTIONAL (privileged
//     containers only); a volume under the pod's directory that is mounted
//     with propagation becomes a shared mount first (see shareVolume), as
//     the runtime requires;
//   - subPath (or subPathExpr expanded with env, the container's resolved
//     environment; a reference to a missing or empty variable is an error)
//     must stay within the volume, also through symlinks; it is created as a
//     directory when missing, then opened without following symlinks and
//     bind-mounted at <pod>/volume-subpaths/<volume>/<container>/<index>,
//     which the container gets. That bind mount is reused when the
//     container restarts, so subPath mounts of updated volumes keep their
//     content, as upstream.
//
// Errors name the field (volumeMounts[i].…) and wrap
// errdefs.ErrInvalidArgument (a bad spec) or errdefs.ErrNotFound (an
// unknown volume); the kubelet reports them as CreateContainerConfigError.
func (ms *Mounts) Container(c *v1.Container, env map[string]string) ([]*runtimeapi.Mount, error) {
	if c == nil {
		return nil, fmt.Errorf("volumes: container is nil: %w", errdefs.ErrInvalidArgument)
	}
	defer ms.m.lockPod(ms.pod.UID)()
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	out := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts))
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		field := fmt.Sprintf("container %q: volumeMounts[%d]", c.Name, i)
		vol, ok := ms.volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("%s: cannot find volume %q to mount into container %q: %w", field, vm.Name, c.Name, errdefs.ErrNotFound)
		}
		if !filepath.IsAbs(vm.MountPath) {
			return nil, fmt.Errorf("%s.mountPath %q: must be an absolute path: %w", field, vm.MountPath, errdefs.ErrInvalidArgument)
		}
		propagation, err := propagationOf(vm.MountPropagation, privileged)
		if err != nil {
			return nil, fmt.Errorf("%s.mountPropagation: %w", field, err)
		}
		subPath, subField, err := subPathOf(vm, env)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", field, err)
		}
		readOnly := vm.ReadOnly || vol.readOnly
		rro, err := recursiveReadOnly(vm, readOnly, ms.m.cfg.RecursiveReadOnly)
		if err != nil {
			return nil, fmt.Errorf("%s.recursiveReadOnly: %w", field, err)
		}
		if propagation != runtimeapi.MountPropagation_PROPAGATION_PRIVATE {
			if err := ms.m.shareVolume(ms.pod.UID, vol.path); err != nil {
				return nil, fmt.Errorf("%s.mountPropagation: %w", field, err)
			}
		}
		hostPath := vol.path
		if subPath != "" {
			if err := checkSubPath(subPath); err != nil {
				return nil, fmt.Errorf("%s.%s %q: %w", field, subField, subPath, err)
			}
			hostPath, err = ms.m.prepareSubPath(ms.pod.UID, vm.Name, c.Name, i, vol.path, subPath)
			if err != nil {
				return nil, fmt.Errorf("%s.%s %q: %w", field, subField, subPath, err)
			}
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath:     vm.MountPath,
			HostPath:          hostPath,
			Readonly:          readOnly,
			RecursiveReadOnly: rro,
			Propagation:       propagation,
		})
	}
	return out, nil
}

// recursiveReadOnly decides a mount's recursive read-only flag: Disabled
// (or unset) never, IfPossible when the mount is read-only and the runtime
// supports it, Enabled always — an error when the mount is not read-only,
// propagates mounts, or the runtime lacks support.
func recursiveReadOnly(vm *v1.VolumeMount, readOnly, supported bool) (bool, error) {
	if vm.RecursiveReadOnly == nil {
		return false, nil
	}
	switch mode := *vm.RecursiveReadOnly; mode {
	case v1.RecursiveReadOnlyDisabled:
		return false, nil
	case v1.RecursiveReadOnlyIfPossible:
		return supported && readOnly, nil
	case v1.RecursiveReadOnlyEnabled:
		if !vm.ReadOnly {
			return false, fmt.Errorf("Enabled requires readOnly: true: %w", errdefs.ErrInvalidArgument)
		}
		if vm.MountPropagation != nil && *vm.MountPropagation != v1.MountPropagationNone {
			return false, fmt.Errorf("Enabled requires mountPropagation None: %w", errdefs.ErrInvalidArgument)
		}
		if !supported {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime: %w", vm.Name, errdefs.ErrUnimplemented)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown mode %q: %w", mode, errdefs.ErrInvalidArgument)
	}
}

func propagationOf(p *v1.MountPropagationMode, privileged bool) (runtimeapi.MountPropagation, error) {
	if p == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	}
	switch *p {
	case v1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case v1.MountPropagationBidirectional:
		if !privileged {
			return 0, fmt.Errorf("Bidirectional mount propagation is available only to privileged containers: %w", errdefs.ErrInvalidArgument)
		}
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("invalid MountPropagation mode: %q: %w", *p, errdefs.ErrInvalidArgument)
}

// subPathOf returns the mount's subPath, expanding subPathExpr, and the
// name of the field it came from.
func subPathOf(vm *v1.VolumeMount, env map[string]string) (string, string, error) {
	if vm.SubPathExpr == "" {
		return vm.SubPath, "subPath", nil
	}
	if vm.SubPath != "" {
		return "", "", fmt.Errorf("subPathExpr: may not be set together with subPath: %w", errdefs.ErrInvalidArgument)
	}
	var missing []string
	expanded := expansion.Expand(vm.SubPathExpr, func(name string) (string, bool) {
		v, ok := env[name]
		if !ok || v == "" {
			if !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
			return "", true
		}
		return v, true
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", "", fmt.Errorf("subPathExpr %q: missing value for %s: %w", vm.SubPathExpr, strings.Join(missing, ", "), errdefs.ErrInvalidArgument)
	}
	return expanded, "subPathExpr", nil
}

// checkSubPath refuses absolute subPaths and ones with a ".." element.
func checkSubPath(p string) error {
	if filepath.IsAbs(p) {
		return fmt.Errorf("must not be an absolute path: %w", errdefs.ErrInvalidArgument)
	}
	for _, item := range strings.Split(filepath.ToSlash(p), "/") {
		if item == ".." {
			return fmt.Errorf("must not contain '..': %w", errdefs.ErrInvalidArgument)
		}
	}
	return nil
}

// shareVolume makes the volume directory path, when it is in the pod's
// directory (emptyDir, configMap, secret, downwardAPI, projected and CSI
// volumes; not hostPath), the root of a shared mount subtree — bound onto
// itself first when it is not a mount point — unless the mount it is on is
// shared already. The runtime refuses HostToContainer and Bidirectional
// mounts of a path on a private mount; the kubelet avoids this by making its
// whole root dir rshared, which would leave a mount behind on every node
// the agent stops on. TearDown unmounts the volume's mounts, this one too.
func (m *Manager) shareVolume(uid types.UID, path string) error {
	if !strings.HasPrefix(path, m.podDir(uid)+string(filepath.Separator)) {
		return nil
	}
	changed, err := makeRShared(path)
	if err != nil {
		return err
	}
	if changed {
		m.cfg.Logger.Debug("made the volume a shared mount for mount propagation", "uid", uid, "path", path)
	}
	return nil
}
