package driver

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"berth/csi/internal/mounts"
)

// loopTimeout bounds the wait for the kernel to release a loop device.
const loopTimeout = 10 * time.Second

// NodeStageVolume mounts the volume at the staging path: the volume's
// directory bind-mounted, or its ext4 image loop-mounted. Staging again at
// the same path is a no-op.
func (d *Driver) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id: must not be empty")
	}
	if req.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "staging_target_path: must not be empty")
	}
	if !filepath.IsAbs(req.GetStagingTargetPath()) {
		return nil, status.Errorf(codes.InvalidArgument, "staging_target_path %q: must be absolute", req.GetStagingTargetPath())
	}
	if req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume_capability: must not be empty")
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	flags, err := mounts.Flags(req.GetVolumeCapability().GetMount().GetMountFlags())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "volume_capability.mount.mount_flags: %v", err)
	}
	staging := filepath.Clean(req.GetStagingTargetPath())

	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.store.get(req.GetVolumeId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.GetVolumeId())
	}
	if fs := req.GetVolumeCapability().GetMount().GetFsType(); v.Kind == kindExt4File && fs != "" && fs != v.FSType {
		return nil, status.Errorf(codes.InvalidArgument, "volume_capability.mount.fs_type %q: volume %s is formatted %s", fs, v, v.FSType)
	}
	if v.StagingPath != "" {
		mounted, err := mounts.IsMountPoint(v.StagingPath)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "stage %s: %v", v, err)
		}
		switch {
		case mounted && v.StagingPath == staging:
			return &csi.NodeStageVolumeResponse{}, nil
		case mounted:
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is already staged at %s", v, v.StagingPath)
		}
	}
	if mounted, err := mounts.IsMountPoint(staging); err != nil {
		return nil, status.Errorf(codes.Internal, "stage %s: %v", v, err)
	} else if mounted {
		return nil, status.Errorf(codes.AlreadyExists, "staging_target_path %s: something else is mounted there", staging)
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "stage %s: %v", v, err)
	}
	if err := d.mountStaging(v, staging, flags); err != nil {
		return nil, status.Errorf(codes.Internal, "stage %s at %s: %v", v, staging, err)
	}
	v.StagingPath = staging
	if err := d.store.save(v); err != nil {
		_ = d.unmountStaging(v, staging)
		return nil, status.Errorf(codes.Internal, "stage %s: %v", v, err)
	}
	d.log.Info("volume staged", "id", v.ID, "stagingPath", staging)
	return &csi.NodeStageVolumeResponse{}, nil
}

func (d *Driver) mountStaging(v *volume, staging string, flags uintptr) error {
	data := d.store.dataPath(v)
	if v.Kind == kindDirectory {
		return mounts.Bind(data, staging, flags)
	}
	loop, err := mounts.AttachLoop(data)
	if err != nil {
		return err
	}
	err = mounts.MountFS(loop.Device, staging, v.FSType, flags)
	loop.Close() // auto-clear: the device now lives exactly as long as the mount
	if err != nil {
		_ = mounts.DetachLoops(data, loopTimeout)
		return err
	}
	return nil
}

func (d *Driver) unmountStaging(v *volume, staging string) error {
	if err := mounts.Unmount(staging); err != nil {
		return err
	}
	if v.Kind == kindExt4File {
		return mounts.DetachLoops(d.store.dataPath(v), loopTimeout)
	}
	return nil
}

// NodeUnstageVolume unmounts the staging path (and, for ext4 volumes, waits
// for the loop device to go). It leaves the directory to the CO, as the spec says.
func (d *Driver) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id: must not be empty")
	}
	if req.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "staging_target_path: must not be empty")
	}
	staging := filepath.Clean(req.GetStagingTargetPath())

	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.store.get(req.GetVolumeId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.GetVolumeId())
	}
	if v.StagingPath != "" && v.StagingPath != staging {
		// Staged elsewhere: nothing of this volume is at the given path.
		return &csi.NodeUnstageVolumeResponse{}, nil
	}
	for t := range v.Published {
		if mounted, err := mounts.IsMountPoint(t); err != nil {
			return nil, status.Errorf(codes.Internal, "unstage %s: %v", v, err)
		} else if mounted {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published at %s", v, t)
		}
	}
	if v.StagingPath == "" {
		return &csi.NodeUnstageVolumeResponse{}, nil
	}
	if err := d.unmountStaging(v, staging); err != nil {
		return nil, status.Errorf(codes.Internal, "unstage %s: %v", v, err)
	}
	v.StagingPath = ""
	if err := d.store.save(v); err != nil {
		return nil, status.Errorf(codes.Internal, "unstage %s: %v", v, err)
	}
	d.log.Info("volume unstaged", "id", v.ID, "stagingPath", staging)
	return &csi.NodeUnstageVolumeResponse{}, nil
}
