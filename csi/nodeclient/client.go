// Package nodeclient is the agent's CSI node client: it calls a CSI driver's
// node service (NodeGetInfo, NodeGetCapabilities, NodeStage/Publish/
// Unpublish/UnstageVolume, NodeGetVolumeStats) the way the kubelet does, with
// the kubelet's staging and target path layout (see layout.go), and
// translates gRPC codes into berth/internal/errdefs classes at this boundary.
package nodeclient

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"berth/internal/errdefs"
)

// DefaultCallTimeout bounds each call unless the caller's context is shorter
// (the kubelet allows its CSI node calls two minutes too).
const DefaultCallTimeout = 2 * time.Minute

// Config configures a client for one driver.
type Config struct {
	// Driver is the CSI driver's name, e.g. "csi-local.berth.dev". Required:
	// it is part of the staging path and of every error.
	Driver string
	// Endpoint is the driver's CSI socket: "unix:///path" or an absolute path. Required.
	Endpoint string
	// CallTimeout bounds each call; default DefaultCallTimeout.
	CallTimeout time.Duration
}

// Validate checks the config and fills in defaults.
func (c *Config) Validate() error {
	var errs []error
	if c.Driver == "" {
		errs = append(errs, fmt.Errorf("driver: is required: %w", errdefs.ErrInvalidArgument))
	}
	path, err := socketPath(c.Endpoint)
	if err != nil {
		errs = append(errs, err)
	} else {
		c.Endpoint = path
	}
	if c.CallTimeout < 0 {
		errs = append(errs, fmt.Errorf("call timeout %s: must not be negative: %w", c.CallTimeout, errdefs.ErrInvalidArgument))
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	return errors.Join(errs...)
}

func socketPath(endpoint string) (string, error) {
	path := endpoint
	if scheme, rest, ok := strings.Cut(endpoint, "://"); ok {
		if scheme != "unix" {
			return "", fmt.Errorf("endpoint %q: only unix:// endpoints are supported: %w", endpoint, errdefs.ErrInvalidArgument)
		}
		path = rest
	}
	if path == "" || !filepath.IsAbs(path) {
		return "", fmt.Errorf("endpoint %q: must be unix:///absolute/path or an absolute path: %w", endpoint, errdefs.ErrInvalidArgument)
	}
	return filepath.Clean(path), nil
}

// Client talks to one CSI driver's node service. It is safe for concurrent use.
type Client struct {
	cfg  Config
	conn *grpc.ClientConn
	node csi.NodeClient
}

// New validates cfg and returns a client. It does not connect: the
// connection is made on the first call and re-made after the driver restarts.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("csi node client config: %w", err)
	}
	conn, err := grpc.NewClient("unix://"+cfg.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("csi %s: connect to %s: %w", cfg.Driver, cfg.Endpoint, err)
	}
	return &Client{cfg: cfg, conn: conn, node: csi.NewNodeClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Driver is the driver's name.
func (c *Client) Driver() string { return c.cfg.Driver }

// Endpoint is the path of the driver's socket.
func (c *Client) Endpoint() string { return c.cfg.Endpoint }

func (c *Client) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.CallTimeout)
}

// NodeInfo is what NodeGetInfo reports.
type NodeInfo struct {
	// NodeID is the driver's identity for this node (it goes on the CSINode object).
	NodeID string
	// MaxVolumesPerNode is the driver's volume limit for this node; 0 means none.
	MaxVolumesPerNode int64
	// AccessibleTopology is this node's topology segments, or nil.
	AccessibleTopology map[string]string
}

// NodeGetInfo asks the driver who this node is.
func (c *Client) NodeGetInfo(ctx context.Context) (NodeInfo, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return NodeInfo{}, c.translate("NodeGetInfo", "", err)
	}
	if resp.GetNodeId() == "" {
		return NodeInfo{}, &Error{Op: "NodeGetInfo", Driver: c.cfg.Driver, Message: "the driver reported an empty node_id", classes: []error{errdefs.ErrInvalidArgument}}
	}
	if resp.GetMaxVolumesPerNode() < 0 {
		return NodeInfo{}, &Error{Op: "NodeGetInfo", Driver: c.cfg.Driver, Message: fmt.Sprintf("the driver reported a negative max_volumes_per_node %d", resp.GetMaxVolumesPerNode()), classes: []error{errdefs.ErrInvalidArgument}}
	}
	return NodeInfo{
		NodeID:             resp.GetNodeId(),
		MaxVolumesPerNode:  resp.GetMaxVolumesPerNode(),
		AccessibleTopology: resp.GetAccessibleTopology().GetSegments(),
	}, nil
}

// Capabilities are the node service capabilities a driver reports.
type Capabilities struct {
	// StageUnstage: the driver wants NodeStageVolume before NodePublishVolume.
	StageUnstage bool
	// GetVolumeStats: NodeGetVolumeStats is implemented.
	GetVolumeStats bool
	// ExpandVolume: NodeExpandVolume is implemented.
	ExpandVolume bool
	// SingleNodeMultiWriter: the SINGLE_NODE_{SINGLE,MULTI}_WRITER access modes are understood.
	SingleNodeMultiWriter bool
	// VolumeMountGroup: the driver applies a volume_mount_group (fsGroup) itself.
	VolumeMountGroup bool
}

// NodeGetCapabilities asks the driver what its node service can do.
func (c *Client) NodeGetCapabilities(ctx context.Context) (Capabilities, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return Capabilities{}, c.translate("NodeGetCapabilities", "", err)
	}
	var caps Capabilities
	for _, cp := range resp.GetCapabilities() {
		switch cp.GetRpc().GetType() {
		case csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			caps.StageUnstage = true
		case csi.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			caps.GetVolumeStats = true
		case csi.NodeServiceCapability_RPC_EXPAND_VOLUME:
			caps.ExpandVolume = true
		case csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER:
			caps.SingleNodeMultiWriter = true
		case csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP:
			caps.VolumeMountGroup = true
		}
	}
	return caps, nil
}

// Volume is what the node calls need to know about a CSI volume: the fields
// of a PV's (or an inline volume's) CSI source, resolved.
type Volume struct {
	// Handle is the CSI volume_id (a PV's spec.csi.volumeHandle). Required.
	Handle string
	// ReadOnly publishes the volume read-only.
	ReadOnly bool
	// FSType is the filesystem to mount, "" for the driver's default.
	FSType string
	// MountFlags are the mount options (a PV's spec.mountOptions).
	MountFlags []string
	// AccessMode defaults to SINGLE_NODE_WRITER (SINGLE_NODE_READER_ONLY when ReadOnly).
	AccessMode csi.VolumeCapability_AccessMode_Mode
	// VolumeContext is the PV's spec.csi.volumeAttributes.
	VolumeContext map[string]string
	// PublishContext is what ControllerPublishVolume returned, if the driver attaches.
	PublishContext map[string]string
	// StageSecrets and PublishSecrets are the nodeStage/nodePublish secrets' data.
	StageSecrets, PublishSecrets map[string]string
}

func (v Volume) capability() *csi.VolumeCapability {
	mode := v.AccessMode
	if mode == csi.VolumeCapability_AccessMode_UNKNOWN {
		mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
		if v.ReadOnly {
			mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
		}
	}
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: v.FSType, MountFlags: v.MountFlags}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

func (c *Client) checkVolume(op string, v Volume, paths ...string) error {
	if v.Handle == "" {
		return &Error{Op: op, Driver: c.cfg.Driver, Message: "volume handle is empty", classes: []error{errdefs.ErrInvalidArgument}}
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return &Error{Op: op, Driver: c.cfg.Driver, Subject: v.Handle, Message: fmt.Sprintf("path %q is not absolute", p), classes: []error{errdefs.ErrInvalidArgument}}
		}
	}
	return nil
}

// NodeStageVolume asks the driver to stage the volume at stagingPath (the
// caller creates the directory; see MountDevice for the kubelet's flow).
func (c *Client) NodeStageVolume(ctx context.Context, v Volume, stagingPath string) error {
	if err := c.checkVolume("NodeStageVolume", v, stagingPath); err != nil {
		return err
	}
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId:          v.Handle,
		PublishContext:    v.PublishContext,
		StagingTargetPath: stagingPath,
		VolumeCapability:  v.capability(),
		Secrets:           v.StageSecrets,
		VolumeContext:     v.VolumeContext,
	})
	return c.translate("NodeStageVolume", v.Handle, err)
}

// NodeUnstageVolume asks the driver to undo NodeStageVolume.
func (c *Client) NodeUnstageVolume(ctx context.Context, handle, stagingPath string) error {
	if err := c.checkVolume("NodeUnstageVolume", Volume{Handle: handle}, stagingPath); err != nil {
		return err
	}
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: handle, StagingTargetPath: stagingPath})
	return c.translate("NodeUnstageVolume", handle, err)
}

// NodePublishVolume asks the driver to make the volume available at
// targetPath; stagingPath is "" for drivers without STAGE_UNSTAGE_VOLUME.
func (c *Client) NodePublishVolume(ctx context.Context, v Volume, stagingPath, targetPath string) error {
	paths := []string{targetPath}
	if stagingPath != "" {
		paths = append(paths, stagingPath)
	}
	if err := c.checkVolume("NodePublishVolume", v, paths...); err != nil {
		return err
	}
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId:          v.Handle,
		PublishContext:    v.PublishContext,
		StagingTargetPath: stagingPath,
		TargetPath:        targetPath,
		VolumeCapability:  v.capability(),
		Readonly:          v.ReadOnly,
		Secrets:           v.PublishSecrets,
		VolumeContext:     v.VolumeContext,
	})
	return c.translate("NodePublishVolume", v.Handle, err)
}

// NodeUnpublishVolume asks the driver to undo NodePublishVolume.
func (c *Client) NodeUnpublishVolume(ctx context.Context, handle, targetPath string) error {
	if err := c.checkVolume("NodeUnpublishVolume", Volume{Handle: handle}, targetPath); err != nil {
		return err
	}
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: handle, TargetPath: targetPath})
	return c.translate("NodeUnpublishVolume", handle, err)
}

// VolumeStats is what NodeGetVolumeStats reports, in the shape of the
// kubelet_volume_stats_* metrics.
type VolumeStats struct {
	CapacityBytes, AvailableBytes, UsedBytes int64
	Inodes, InodesFree, InodesUsed           int64
	// HasBytes and HasInodes tell which units the driver reported.
	HasBytes, HasInodes bool
}

// NodeGetVolumeStats asks the driver for the usage of the volume at volumePath.
func (c *Client) NodeGetVolumeStats(ctx context.Context, handle, volumePath string) (VolumeStats, error) {
	if err := c.checkVolume("NodeGetVolumeStats", Volume{Handle: handle}, volumePath); err != nil {
		return VolumeStats{}, err
	}
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: handle, VolumePath: volumePath})
	if err != nil {
		return VolumeStats{}, c.translate("NodeGetVolumeStats", handle, err)
	}
	var st VolumeStats
	for _, u := range resp.GetUsage() {
		switch u.GetUnit() {
		case csi.VolumeUsage_BYTES:
			st.HasBytes = true
			st.CapacityBytes, st.AvailableBytes, st.UsedBytes = u.GetTotal(), u.GetAvailable(), u.GetUsed()
		case csi.VolumeUsage_INODES:
			st.HasInodes = true
			st.Inodes, st.InodesFree, st.InodesUsed = u.GetTotal(), u.GetAvailable(), u.GetUsed()
		}
	}
	return st, nil
}
