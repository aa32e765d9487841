package driver

import (
	"context"
	"os"
	"sort"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"berth/csi/internal/mounts"
)

// DeleteVolume removes a volume and its data. An unknown volume is already
// deleted; a volume still staged or published is in use (FailedPrecondition).
func (d *Driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id: must not be empty")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.store.get(req.GetVolumeId())
	if !ok {
		return &csi.DeleteVolumeResponse{}, nil
	}
	if paths, err := d.mountedPaths(v); err != nil {
		return nil, status.Errorf(codes.Internal, "delete volume %s: %v", v, err)
	} else if len(paths) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is in use: mounted at %v", v, paths)
	}
	data := d.store.dataPath(v)
	if v.Kind == kindExt4File {
		if err := mounts.DetachLoops(data, loopTimeout); err != nil {
			return nil, status.Errorf(codes.Internal, "delete volume %s: %v", v, err)
		}
	}
	if err := os.RemoveAll(data); err != nil {
		return nil, status.Errorf(codes.Internal, "delete volume %s: %v", v, err)
	}
	if err := d.store.remove(v.ID); err != nil {
		return nil, status.Errorf(codes.Internal, "delete volume %s: %v", v, err)
	}
	d.log.Info("volume deleted", "id", v.ID, "name", v.Name)
	return &csi.DeleteVolumeResponse{}, nil
}

// mountedPaths returns the staging and target paths of v that are mount points now.
func (d *Driver) mountedPaths(v *volume) ([]string, error) {
	var out []string
	candidates := make([]string, 0, len(v.Published)+1)
	if v.StagingPath != "" {
		candidates = append(candidates, v.StagingPath)
	}
	for t := range v.Published {
		candidates = append(candidates, t)
	}
	sort.Strings(candidates)
	for _, p := range candidates {
		mounted, err := mounts.IsMountPoint(p)
		if err != nil {
			return nil, err
		}
		if mounted {
			out = append(out, p)
		}
	}
	return out, nil
}

// ValidateVolumeCapabilities confirms the capabilities csi-local can serve
// for an existing volume, and says why otherwise.
func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id: must not be empty")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume_capabilities: must not be empty")
	}
	d.mu.Lock()
	v, ok := d.store.get(req.GetVolumeId())
	d.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.GetVolumeId())
	}
	for k := range req.GetParameters() {
		if _, ok := v.Parameters[k]; !ok {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: "parameter " + strconv.Quote(k) + " was not used to create the volume"}, nil
		}
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := checkCapability(c); err != nil {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
		}
		if v.Kind == kindDirectory && c.GetMount().GetFsType() == "ext4" && v.CapacityBytes > 0 {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: "volume " + v.ID + " is a directory volume, not an ext4 filesystem"}, nil
		}
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

// ListVolumes lists volumes in ID order. The next token is the last ID
// returned; a token that is not a volume ID is invalid (Aborted, as the spec
// asks).
func (d *Driver) ListVolumes(_ context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "max_entries %d: must not be negative", req.GetMaxEntries())
	}
	token := req.GetStartingToken()
	if token != "" && !volumeIDRE.MatchString(token) {
		return nil, status.Errorf(codes.Aborted, "starting_token %q: not a token csi-local issued", token)
	}
	d.mu.Lock()
	all := d.store.sorted()
	d.mu.Unlock()
	start := sort.Search(len(all), func(i int) bool { return all[i].ID > token })
	end := len(all)
	if n := int(req.GetMaxEntries()); n > 0 && start+n < end {
		end = start + n
	}
	resp := &csi.ListVolumesResponse{}
	for _, v := range all[start:end] {
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{Volume: d.csiVolume(v)})
	}
	if end < len(all) {
		resp.NextToken = all[end-1].ID
	}
	return resp, nil
}

// GetCapacity reports the space available in the root dir's filesystem, or 0
// for capabilities or a topology csi-local cannot serve.
func (d *Driver) GetCapacity(_ context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	for _, c := range req.GetVolumeCapabilities() {
		if checkCapability(c) != nil {
			return &csi.GetCapacityResponse{}, nil
		}
	}
	if t := req.GetAccessibleTopology(); t != nil && !d.topologyMatches(t) {
		return &csi.GetCapacityResponse{}, nil
	}
	st, err := mounts.Statfs(d.cfg.RootDir)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "get capacity: %v", err)
	}
	avail := int64(st.Bavail) * st.Bsize
	return &csi.GetCapacityResponse{AvailableCapacity: avail, MaximumVolumeSize: wrapperspb.Int64(avail)}, nil
}
