package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"berth/csi/internal/mounts"
)

// NodePublishVolume bind-mounts the staged volume at the target path,
// read-only when asked (readonly, a reader-only access mode, or the "ro"
// mount flag). The driver creates the target directory; publishing again
// with the same options is a no-op. A volume context marking a CSI ephemeral
// inline volume makes the driver create an empty directory volume for the
// handle on first publish and bind it directly (no staging).
func (d *Driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id: must not be empty")
	}
	if req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "target_path: must not be empty")
	}
	if !filepath.IsAbs(req.GetTargetPath()) {
		return nil, status.Errorf(codes.InvalidArgument, "target_path %q: must be absolute", req.GetTargetPath())
	}
	if req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume_capability: must not be empty")
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	ephemeral := req.GetVolumeContext()[EphemeralContextKey] == "true"
	if req.GetStagingTargetPath() == "" && !ephemeral {
		return nil, status.Error(codes.InvalidArgument, "staging_target_path: must not be empty (csi-local has STAGE_UNSTAGE_VOLUME)")
	}
	flags, err := mounts.Flags(req.GetVolumeCapability().GetMount().GetMountFlags())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "volume_capability.mount.mount_flags: %v", err)
	}
	readOnly := req.GetReadonly() || readOnlyMode(req.GetVolumeCapability()) || flags&unix.MS_RDONLY != 0
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	target := filepath.Clean(req.GetTargetPath())
	staging := filepath.Clean(req.GetStagingTargetPath())

	d.mu.Lock()
	defer d.mu.Unlock()
	var v *volume
	source := staging
	if ephemeral {
		var err error
		if v, err = d.ephemeralVolume(req.GetVolumeId(), req.GetVolumeContext()); err != nil {
			return nil, err
		}
		source = d.store.dataPath(v)
	} else {
		var ok bool
		if v, ok = d.store.get(req.GetVolumeId()); !ok {
			return nil, status.Errorf(codes.NotFound, "volume %q not found", req.GetVolumeId())
		}
		if v.StagingPath != staging {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", v, staging)
		}
		if mounted, err := mounts.IsMountPoint(staging); err != nil {
			return nil, status.Errorf(codes.Internal, "publish %s: %v", v, err)
		} else if !mounted {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s: staging path %s is not mounted (stage it again)", v, staging)
		}
	}
	mounted, err := mounts.IsMountPoint(target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "publish %s: %v", v, err)
	}
	if mounted {
		ro, ours := v.Published[target]
		switch {
		case !ours:
			return nil, status.Errorf(codes.AlreadyExists, "target_path %s: something else is mounted there", target)
		case ro != readOnly:
			return nil, status.Errorf(codes.AlreadyExists, "volume %s is already published at %s with readonly=%t", v, target, ro)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "publish %s: create target: %v", v, err)
	}
	if err := mounts.Bind(source, target, flags); err != nil {
		return nil, status.Errorf(codes.Internal, "publish %s: %v", v, err)
	}
	if v.Published == nil {
		v.Published = map[string]bool{}
	}
	v.Published[target] = readOnly
	if err := d.store.save(v); err != nil {
		_ = mounts.Unmount(target)
		delete(v.Published, target)
		return nil, status.Errorf(codes.Internal, "publish %s: %v", v, err)
	}
	d.log.Info("volume published", "id", v.ID, "targetPath", target, "readOnly", readOnly)
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target path and removes it, as the spec
// asks of the SP. A target that is already gone is a success. An ephemeral
// volume is deleted with its last publication.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id: must not be empty")
	}
	if req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "target_path: must not be empty")
	}
	target := filepath.Clean(req.GetTargetPath())

	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.store.published(req.GetVolumeId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.GetVolumeId())
	}
	if _, ours := v.Published[target]; ours {
		if err := mounts.Unmount(target); err != nil {
			return nil, status.Errorf(codes.Internal, "unpublish %s: %v", v, err)
		}
	} else if mounted, err := mounts.IsMountPoint(target); err != nil {
		return nil, status.Errorf(codes.Internal, "unpublish %s: %v", v, err)
	} else if mounted {
		return nil, status.Errorf(codes.FailedPrecondition, "target_path %s: mounted, but not by volume %s", target, v)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "unpublish %s: remove target: %v", v, err)
	}
	if _, ours := v.Published[target]; ours {
		delete(v.Published, target)
		if err := d.store.save(v); err != nil {
			return nil, status.Errorf(codes.Internal, "unpublish %s: %v", v, err)
		}
		d.log.Info("volume unpublished", "id", v.ID, "targetPath", target)
	}
	if v.Ephemeral && len(v.Published) == 0 {
		if err := os.RemoveAll(d.store.dataPath(v)); err != nil {
			return nil, status.Errorf(codes.Internal, "unpublish %s: delete ephemeral volume: %v", v, err)
		}
		if err := d.store.remove(v.ID); err != nil {
			return nil, status.Errorf(codes.Internal, "unpublish %s: %v", v, err)
		}
		d.log.Info("ephemeral volume deleted", "id", v.ID, "handle", v.Name)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// EphemeralContextKey is the volume-context key with which the kubelet marks
// a CSI ephemeral inline volume ("true").
const EphemeralContextKey = "csi.storage.k8s.io/ephemeral"

// ephemeralVolume returns the ephemeral inline volume the CO calls handle,
// creating it (an empty directory) on first publish. Callers hold d.mu.
func (d *Driver) ephemeralVolume(handle string, volumeContext map[string]string) (*volume, error) {
	if v, ok := d.store.getEphemeral(handle); ok {
		return v, nil
	}
	for k := range volumeContext {
		if !strings.HasPrefix(k, "csi.storage.k8s.io/") {
			return nil, status.Errorf(codes.InvalidArgument, "volume_context: unknown attribute %q for an ephemeral volume (csi-local takes none)", k)
		}
	}
	v := &volume{ID: ephemeralID(handle), Name: handle, Kind: kindDirectory, Ephemeral: true, Created: time.Now().UTC()}
	if err := d.provision(v); err != nil {
		return nil, status.Errorf(codes.Internal, "create ephemeral volume %q: %v", handle, err)
	}
	if err := d.store.save(v); err != nil {
		_ = os.RemoveAll(d.store.dataPath(v))
		return nil, status.Errorf(codes.Internal, "create ephemeral volume %q: %v", handle, err)
	}
	d.log.Info("ephemeral volume created", "id", v.ID, "handle", handle)
	return v, nil
}
