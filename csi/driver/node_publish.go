package driver

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"berth/csi/internal/mounts"
)

// NodePublishVolume bind-mounts the staged volume at the target path,
// read-only when asked (readonly, a reader-only access mode, or the "ro"
// mount flag). The driver creates the target directory; publishing again
// with the same options is a no-op.
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
	if req.GetStagingTargetPath() == "" {
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
	v, ok := d.store.get(req.GetVolumeId())
	if !ok {
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
	if err := mounts.Bind(staging, target, flags); err != nil {
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
// asks of the SP. A target that is already gone is a success.
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
	v, ok := d.store.get(req.GetVolumeId())
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
	return &csi.NodeUnpublishVolumeResponse{}, nil
}
