package driver

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"berth/csi/internal/mounts"
)

// minExt4Bytes is the smallest ext4 image csi-local makes: mkfs.ext4 needs
// room for its metadata and journal.
const minExt4Bytes = 16 << 20

// ext4Align is the granularity an ext4 image's size is rounded up to.
const ext4Align = 1 << 20

// CreateVolume creates a volume, or returns the existing one of that name if
// it is compatible (idempotent by name).
func (d *Driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name: must not be empty")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "volume_content_source: csi-local creates empty volumes only (no snapshots or clones)")
	}
	for k := range req.GetParameters() {
		if !strings.HasPrefix(k, "csi.storage.k8s.io/") {
			return nil, status.Errorf(codes.InvalidArgument, "parameters: unknown parameter %q (csi-local takes none)", k)
		}
	}
	required, limit := req.GetCapacityRange().GetRequiredBytes(), req.GetCapacityRange().GetLimitBytes()
	if required < 0 || limit < 0 {
		return nil, status.Error(codes.InvalidArgument, "capacity_range: required_bytes and limit_bytes must not be negative")
	}
	if limit > 0 && required > limit {
		return nil, status.Errorf(codes.InvalidArgument, "capacity_range: required_bytes %d exceeds limit_bytes %d", required, limit)
	}
	if err := d.checkTopology(req.GetAccessibilityRequirements()); err != nil {
		return nil, err
	}

	kind, fsType := kindDirectory, ""
	if wantsExt4(req.GetVolumeCapabilities()) && (required > 0 || limit > 0) {
		kind, fsType = kindExt4File, "ext4"
	}
	capacity, err := volumeSize(kind, required, limit)
	if err != nil {
		return nil, err
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if v, ok := d.store.byName(req.GetName()); ok {
		if v.Kind != kind {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists as a %s volume; this request asks for a %s volume", v.Name, v.Kind, kind)
		}
		if (required > 0 && v.CapacityBytes < required) || (limit > 0 && v.CapacityBytes > limit) {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with capacity %d bytes, outside the requested range [%d, %d]", v.Name, v.CapacityBytes, required, limit)
		}
		return &csi.CreateVolumeResponse{Volume: d.csiVolume(v)}, nil
	}

	v := &volume{
		ID:            newVolumeID(),
		Name:          req.GetName(),
		Kind:          kind,
		CapacityBytes: capacity,
		FSType:        fsType,
		Parameters:    req.GetParameters(),
		Created:       time.Now().UTC(),
	}
	if err := d.provision(v); err != nil {
		return nil, status.Errorf(codes.Internal, "create volume %q: %v", v.Name, err)
	}
	if err := d.store.save(v); err != nil {
		_ = os.RemoveAll(d.store.dataPath(v))
		return nil, status.Errorf(codes.Internal, "create volume %q: %v", v.Name, err)
	}
	d.log.Info("volume created", "id", v.ID, "name", v.Name, "kind", v.Kind, "capacityBytes", v.CapacityBytes)
	return &csi.CreateVolumeResponse{Volume: d.csiVolume(v)}, nil
}

// volumeSize picks the size of a new volume from the capacity range. A
// directory volume's capacity is the requested one (not enforced); an ext4
// volume is rounded up to whole MiB and at least minExt4Bytes.
func volumeSize(kind string, required, limit int64) (int64, error) {
	size := required
	if size == 0 {
		size = limit
	}
	if kind != kindExt4File {
		return size, nil
	}
	size = max(size, minExt4Bytes)
	size = (size + ext4Align - 1) / ext4Align * ext4Align
	if limit > 0 && size > limit {
		return 0, status.Errorf(codes.OutOfRange, "capacity_range: an ext4 volume needs at least %d bytes in whole MiB, above limit_bytes %d", size, limit)
	}
	return size, nil
}

// provision creates the volume's data: a directory, or a sparse file formatted ext4.
func (d *Driver) provision(v *volume) error {
	path := d.store.dataPath(v)
	if v.Kind == kindDirectory {
		return os.Mkdir(path, 0o777)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(v.CapacityBytes)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = mounts.MakeExt4(path)
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// checkTopology fails with ResourceExhausted when the requisite topology
// excludes this node. Preferred topology alone never excludes it: csi-local
// can only provision here.
func (d *Driver) checkTopology(req *csi.TopologyRequirement) error {
	if len(req.GetRequisite()) == 0 {
		return nil
	}
	for _, t := range req.GetRequisite() {
		if d.topologyMatches(t) {
			return nil
		}
	}
	return status.Errorf(codes.ResourceExhausted, "accessibility_requirements: csi-local provisions only on its own node (%s=%s), which is not among the requisite topologies", d.TopologyKey(), d.cfg.NodeID)
}

// topologyMatches reports whether t describes this node. A segment with a key
// csi-local does not know excludes it.
func (d *Driver) topologyMatches(t *csi.Topology) bool {
	for k, val := range t.GetSegments() {
		if k != d.TopologyKey() || val != d.cfg.NodeID {
			return false
		}
	}
	return true
}

func (d *Driver) csiVolume(v *volume) *csi.Volume {
	return &csi.Volume{
		VolumeId:      v.ID,
		CapacityBytes: v.CapacityBytes,
		AccessibleTopology: []*csi.Topology{{
			Segments: map[string]string{d.TopologyKey(): d.cfg.NodeID},
		}},
	}
}

// ControllerGetCapabilities: create/delete, list, and capacity; no attach.
func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	rpc := func(t csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
		return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}}
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
		rpc(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		rpc(csi.ControllerServiceCapability_RPC_LIST_VOLUMES),
		rpc(csi.ControllerServiceCapability_RPC_GET_CAPACITY),
	}}, nil
}

// String renders a volume for logs and errors.
func (v *volume) String() string { return fmt.Sprintf("%s (%q)", v.ID, v.Name) }
