package driver

import (
	"context"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"berth/csi/internal/mounts"
)

// NodeGetVolumeStats reports bytes and inodes (statfs) of the filesystem
// mounted at a path where the volume is staged or published. For a directory
// volume that is the root dir's filesystem; for an ext4 volume, its own.
func (d *Driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id: must not be empty")
	}
	if req.GetVolumePath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_path: must not be empty")
	}
	path := filepath.Clean(req.GetVolumePath())

	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.store.published(req.GetVolumeId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.GetVolumeId())
	}
	_, published := v.Published[path]
	if !published && path != v.StagingPath {
		return nil, status.Errorf(codes.NotFound, "volume %s is not staged or published at %q", v, req.GetVolumePath())
	}
	if mounted, err := mounts.IsMountPoint(path); err != nil {
		return nil, status.Errorf(codes.Internal, "volume stats of %s: %v", v, err)
	} else if !mounted {
		return nil, status.Errorf(codes.NotFound, "volume %s is not mounted at %s", v, path)
	}
	st, err := mounts.Statfs(path)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume stats of %s: %v", v, err)
	}
	bs := st.Bsize
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{
			Unit:      csi.VolumeUsage_BYTES,
			Total:     int64(st.Blocks) * bs,
			Available: int64(st.Bavail) * bs,
			Used:      int64(st.Blocks-st.Bfree) * bs,
		},
		{
			Unit:      csi.VolumeUsage_INODES,
			Total:     int64(st.Files),
			Available: int64(st.Ffree),
			Used:      int64(st.Files - st.Ffree),
		},
	}}, nil
}

// NodeGetCapabilities: staging, and volume stats.
func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	rpc := func(t csi.NodeServiceCapability_RPC_Type) *csi.NodeServiceCapability {
		return &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}}
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{
		rpc(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME),
		rpc(csi.NodeServiceCapability_RPC_GET_VOLUME_STATS),
	}}, nil
}

// NodeGetInfo reports the node ID, the volume limit and the node's topology.
func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             d.cfg.NodeID,
		MaxVolumesPerNode:  d.cfg.MaxVolumesPerNode,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{d.TopologyKey(): d.cfg.NodeID}},
	}, nil
}
