package nodeclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"berth/csi/internal/mounts"
	"berth/internal/errdefs"
)

// The kubelet's names for the CSI plugin's directories.
const (
	// PluginName is the kubelet's in-tree name of the CSI volume plugin.
	PluginName = "kubernetes.io/csi"
	// escapedPluginName is PluginName as a path component of a pod's volumes dir ('/' → '~').
	escapedPluginName = "kubernetes.io~csi"
	globalMountDir    = "globalmount"
	podMountDir       = "mount"
	// VolumeDataFile is the kubelet's per-volume metadata file, next to the
	// staging and target directories; an agent reads it back to reconstruct
	// its mounts after a restart.
	VolumeDataFile = "vol_data.json"
)

// StagingPath is where the kubelet has a CSI volume staged:
// <rootDir>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount.
func StagingPath(rootDir, driver, volumeHandle string) string {
	sum := sha256.Sum256([]byte(volumeHandle))
	return filepath.Join(rootDir, "plugins", PluginName, driver, hex.EncodeToString(sum[:]), globalMountDir)
}

// TargetPath is where the kubelet has a pod's CSI volume published:
// <rootDir>/pods/<podUID>/volumes/kubernetes.io~csi/<volumeName>/mount,
// volumeName being the pod's volume name (a PV's name for a claim).
func TargetPath(rootDir, podUID, volumeName string) string {
	return filepath.Join(rootDir, "pods", podUID, "volumes", escapedPluginName, volumeName, podMountDir)
}

// EphemeralContextKey is the volume-context key that marks a CSI ephemeral
// inline volume for the driver.
const EphemeralContextKey = "csi.storage.k8s.io/ephemeral"

// EphemeralVolumeHandle is the volume handle the kubelet gives a pod's CSI
// ephemeral inline volume: "csi-" + sha256(podUID + volumeName).
func EphemeralVolumeHandle(podUID, volumeName string) string {
	sum := sha256.Sum256([]byte(podUID + volumeName))
	return "csi-" + hex.EncodeToString(sum[:])
}

// VolumeData is the content of vol_data.json, with the kubelet's keys.
type VolumeData struct {
	VolumeHandle string `json:"volumeHandle"`
	DriverName   string `json:"driverName"`
	// SpecVolumeID is the pod's volume name (publish side only).
	SpecVolumeID string `json:"specVolID,omitempty"`
	// LifecycleMode is "Persistent" or "Ephemeral" (publish side only).
	LifecycleMode string `json:"volumeLifecycleMode,omitempty"`
	// PodNamespace and ClaimName are berth's additions (publish side
	// only): the pod's namespace and the PersistentVolumeClaim the volume
	// came through ("" for an inline volume), so volume stats can be
	// labelled after an agent restart without the pod spec.
	PodNamespace string `json:"podNamespace,omitempty"`
	ClaimName    string `json:"persistentVolumeClaim,omitempty"`
}

// PodVolume names a pod's volume for SetUp: where it is published and
// what vol_data.json records about it.
type PodVolume struct {
	// PodUID and Name (the pod's volume name; a PV's name for a claim)
	// make the target path. Required, single path components.
	PodUID, Name string
	// Ephemeral marks a CSI ephemeral inline volume: it is never staged,
	// its volume context says so (EphemeralContextKey), and its handle
	// should be EphemeralVolumeHandle(PodUID, Name).
	Ephemeral bool
	// PodNamespace and ClaimName are recorded in vol_data.json.
	PodNamespace, ClaimName string
}

// ReadVolumeData reads the vol_data.json in dir (the parent of a staging or target path).
func ReadVolumeData(dir string) (VolumeData, error) {
	var d VolumeData
	data, err := os.ReadFile(filepath.Join(dir, VolumeDataFile))
	if errors.Is(err, os.ErrNotExist) {
		return d, fmt.Errorf("%s in %s: %w", VolumeDataFile, dir, errdefs.ErrNotFound)
	}
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("%s in %s: %w: %v", VolumeDataFile, dir, errdefs.ErrInvalidArgument, err)
	}
	return d, nil
}

func writeVolumeData(dir string, d VolumeData) error {
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+VolumeDataFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, VolumeDataFile))
}

// MountDevice is the kubelet's device-mount step for a CSI volume: it creates
// the staging directory, records vol_data.json beside it, and — if the
// driver has STAGE_UNSTAGE_VOLUME — calls NodeStageVolume there, unless
// something is mounted at the staging path already (staged before an agent
// restart). It returns the staging path ("" when the driver does not stage).
func (c *Client) MountDevice(ctx context.Context, rootDir string, v Volume) (string, error) {
	staging := StagingPath(rootDir, c.cfg.Driver, v.Handle)
	if err := c.checkVolume("NodeStageVolume", v, staging); err != nil {
		return "", err
	}
	caps, err := c.NodeGetCapabilities(ctx)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return "", fmt.Errorf("csi %s: create staging dir: %w", c.cfg.Driver, err)
	}
	if err := writeVolumeData(filepath.Dir(staging), VolumeData{VolumeHandle: v.Handle, DriverName: c.cfg.Driver}); err != nil {
		return "", fmt.Errorf("csi %s: record volume data: %w", c.cfg.Driver, err)
	}
	if !caps.StageUnstage {
		return "", nil
	}
	if mounted, err := mounts.IsMountPoint(staging); err == nil && mounted {
		return staging, nil
	}
	if err := c.NodeStageVolume(ctx, v, staging); err != nil {
		return "", err
	}
	return staging, nil
}

// UnmountDevice undoes MountDevice: NodeUnstageVolume (if the driver stages),
// then the staging directory and its vol_data.json are removed. A driver
// answering NotFound (the volume no longer exists) counts as unstaged when
// nothing is mounted at the staging path.
func (c *Client) UnmountDevice(ctx context.Context, rootDir, handle string) error {
	staging := StagingPath(rootDir, c.cfg.Driver, handle)
	caps, err := c.NodeGetCapabilities(ctx)
	if err != nil {
		return err
	}
	if caps.StageUnstage {
		if err := c.NodeUnstageVolume(ctx, handle, staging); err != nil && !(errors.Is(err, errdefs.ErrNotFound) && !isMounted(staging)) {
			return err
		}
	}
	return removeMountDir(staging)
}

// SetUp is the kubelet's set-up step for a pod's CSI volume: it creates the
// volume's directory in the pod, records vol_data.json there, and calls
// NodePublishVolume with the target path (and the staging path if the
// driver stages and the volume is not ephemeral). A target path that is
// mounted already (published before an agent restart) is not published
// again. It returns the target path.
func (c *Client) SetUp(ctx context.Context, rootDir string, pv PodVolume, v Volume) (string, error) {
	podUID, volumeName := pv.PodUID, pv.Name
	if podUID == "" || volumeName == "" || filepath.Base(podUID) != podUID || filepath.Base(volumeName) != volumeName || podUID == ".." || volumeName == ".." {
		return "", &Error{Op: "NodePublishVolume", Driver: c.cfg.Driver, Subject: v.Handle, Message: fmt.Sprintf("pod uid %q and volume name %q must be non-empty single path components", podUID, volumeName), classes: []error{errdefs.ErrInvalidArgument}}
	}
	target := TargetPath(rootDir, podUID, volumeName)
	if err := c.checkVolume("NodePublishVolume", v, target); err != nil {
		return "", err
	}
	caps, err := c.NodeGetCapabilities(ctx)
	if err != nil {
		return "", err
	}
	staging := ""
	if caps.StageUnstage && !pv.Ephemeral {
		staging = StagingPath(rootDir, c.cfg.Driver, v.Handle)
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("csi %s: create volume dir: %w", c.cfg.Driver, err)
	}
	mode := "Persistent"
	if pv.Ephemeral {
		mode = "Ephemeral"
		volumeContext := make(map[string]string, len(v.VolumeContext)+1)
		for k, val := range v.VolumeContext {
			volumeContext[k] = val
		}
		volumeContext[EphemeralContextKey] = "true"
		v.VolumeContext = volumeContext
	}
	if err := writeVolumeData(dir, VolumeData{
		VolumeHandle: v.Handle, DriverName: c.cfg.Driver, SpecVolumeID: volumeName, LifecycleMode: mode,
		PodNamespace: pv.PodNamespace, ClaimName: pv.ClaimName,
	}); err != nil {
		return "", fmt.Errorf("csi %s: record volume data: %w", c.cfg.Driver, err)
	}
	if mounted, err := mounts.IsMountPoint(target); err == nil && mounted {
		return target, nil
	}
	if err := c.NodePublishVolume(ctx, v, staging, target); err != nil {
		return "", err
	}
	return target, nil
}

// TearDown undoes SetUp: NodeUnpublishVolume, then the target directory,
// vol_data.json and the volume's directory in the pod are removed. A driver
// answering NotFound counts as unpublished when nothing is mounted at the target.
func (c *Client) TearDown(ctx context.Context, rootDir, podUID, volumeName, handle string) error {
	target := TargetPath(rootDir, podUID, volumeName)
	if err := c.NodeUnpublishVolume(ctx, handle, target); err != nil && !(errors.Is(err, errdefs.ErrNotFound) && !isMounted(target)) {
		return err
	}
	return removeMountDir(target)
}

func isMounted(path string) bool {
	mounted, err := mounts.IsMountPoint(path)
	return err != nil || mounted // unknown counts as mounted: never delete under a mount
}

// removeMountDir removes a staging or target directory once nothing is
// mounted there, then the vol_data.json beside it and their parent directory.
func removeMountDir(path string) error {
	if isMounted(path) {
		return fmt.Errorf("%s is still mounted: %w", path, errdefs.ErrConflict)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.Remove(filepath.Join(dir, VolumeDataFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove volume data: %w", err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}
