package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/csi/nodeclient"
	"berth/internal/errdefs"
	"berth/internal/mountinfo"
)

// PluginCSI is the plugin directory of CSI volumes under <pod>/volumes, as
// the kubelet names it. A pod's CSI volume is published at
// <pod>/volumes/kubernetes.io~csi/<name>/mount, name being the PV's name
// for a claim and the pod's volume name for an inline volume.
const PluginCSI = "kubernetes.io~csi"

// Volume-context keys the kubelet adds when a CSIDriver asks for pod info
// on mount (spec.podInfoOnMount).
const (
	podInfoName           = "csi.storage.k8s.io/pod.name"
	podInfoNamespace      = "csi.storage.k8s.io/pod.namespace"
	podInfoUID            = "csi.storage.k8s.io/pod.uid"
	podInfoServiceAccount = "csi.storage.k8s.io/serviceAccount.name"
)

// CSIDrivers finds the node clients of the CSI drivers registered on the
// node (agent/csi implements it over the plugin registration watcher).
type CSIDrivers interface {
	// CSIClient returns the node client of the registered driver name.
	CSIClient(driver string) (*nodeclient.Client, bool)
}

// ClaimSource reads what persistentVolumeClaim, ephemeral and csi volumes
// need from the API: claims, their volumes and CSIDriver objects. An object
// that does not exist is an error wrapping errdefs.ErrNotFound.
type ClaimSource interface {
	// GetPersistentVolumeClaim returns the claim namespace/name.
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	// GetPersistentVolume returns the PersistentVolume name.
	GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
	// GetCSIDriver returns the CSIDriver object name.
	GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error)
}

// csiState is the manager's state for CSI volumes: a lock per volume
// handle, so that staging, publishing and unstaging one volume for several
// pods never interleave, and the failed-mount back-off of every volume.
type csiState struct {
	mu      sync.Mutex
	handles map[string]*handleLock
	backoff map[string]*mountFailure // podUID/volume → last failure
}

type handleLock struct {
	sync.Mutex
	users int
}

// lockHandle serialises the calls for one driver's volume handle.
func (s *csiState) lockHandle(driver, handle string) func() {
	key := driver + "\x00" + handle
	s.mu.Lock()
	if s.handles == nil {
		s.handles = map[string]*handleLock{}
	}
	l := s.handles[key]
	if l == nil {
		l = &handleLock{}
		s.handles[key] = l
	}
	l.users++
	s.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		s.mu.Lock()
		if l.users--; l.users == 0 {
			delete(s.handles, key)
		}
		s.mu.Unlock()
	}
}

// csiSpec is a pod's CSI volume resolved: which driver, the node calls'
// arguments, and where it goes.
type csiSpec struct {
	driver    string
	dirName   string // the PV's name for a claim, the pod volume's for an inline volume
	claim     string // "" for an inline volume
	ephemeral bool
	fsGroup   bool // the pod's fsGroup applies to the published volume
	volume    nodeclient.Volume
}

// csiOpError is a failed kubelet step for a CSI volume; it becomes a
// *MountError with that step and the name the kubelet reports (the PV's for
// a claim).
type csiOpError struct {
	op     string // "SetUp" or "MountDevice"
	volume string
	err    error
}

func (e *csiOpError) Error() string { return e.err.Error() }
func (e *csiOpError) Unwrap() error { return e.err }

// rpcError shows a CSI driver's answer the way the kubelet's events do
// ("rpc error: code = … desc = …") and unwraps to the node client's error,
// keeping its errdefs class.
type rpcError struct{ err *nodeclient.Error }

func (e *rpcError) Error() string {
	return fmt.Sprintf("rpc error: code = %s desc = %s", e.err.Code, e.err.Message)
}
func (e *rpcError) Unwrap() error { return e.err }

func driverError(err error) error {
	var ne *nodeclient.Error
	if errors.As(err, &ne) && ne.Code != 0 {
		return &rpcError{err: ne}
	}
	return err
}

// isCSI reports whether vol is one of the types set up through a CSI driver.
func isCSI(vol *v1.Volume) bool {
	return vol.PersistentVolumeClaim != nil || vol.CSI != nil || vol.Ephemeral != nil
}

// setUpCSI sets up a persistentVolumeClaim, generic ephemeral or CSI inline
// volume: the claim's bound PersistentVolume (which must be a CSI volume)
// is staged (NodeStageVolume, if the driver stages) at the kubelet's global
// staging path and published (NodePublishVolume) at the pod's target path.
func (m *Manager) setUpCSI(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (mountedVolume, error) {
	spec, err := m.resolveCSI(ctx, pod, vol)
	if err != nil {
		return mountedVolume{}, err
	}
	if m.cfg.CSI == nil {
		return mountedVolume{}, fmt.Errorf("kubernetes.io/csi: driver name %s not found in the list of registered CSI drivers (this agent has no CSI plugin registry): %w", spec.driver, errdefs.ErrUnavailable)
	}
	client, ok := m.cfg.CSI.CSIClient(spec.driver)
	if !ok {
		return mountedVolume{}, fmt.Errorf("kubernetes.io/csi: driver name %s not found in the list of registered CSI drivers: %w", spec.driver, errdefs.ErrNotFound)
	}
	caps, err := client.NodeGetCapabilities(ctx)
	if err != nil {
		return mountedVolume{}, &csiOpError{op: "SetUp", volume: spec.dirName, err: driverError(err)}
	}
	if spec.volume.AccessMode == csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER && caps.SingleNodeMultiWriter {
		spec.volume.AccessMode = csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
	}
	if spec.volume.AccessMode == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER && !caps.SingleNodeMultiWriter {
		spec.volume.AccessMode = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
	defer m.csi.lockHandle(spec.driver, spec.volume.Handle)()
	if !spec.ephemeral {
		if _, err := client.MountDevice(ctx, m.root, spec.volume); err != nil {
			// Leave no staging directory behind a volume no pod uses.
			if inUse, ierr := m.csiInUse(spec.driver, spec.volume.Handle); ierr == nil && !inUse {
				if uerr := client.UnmountDevice(ctx, m.root, spec.volume.Handle); uerr != nil {
					m.cfg.Logger.Debug("cleaning up after a failed NodeStageVolume", "handle", spec.volume.Handle, "err", uerr)
				}
			}
			return mountedVolume{}, &csiOpError{op: "MountDevice", volume: spec.dirName, err: driverError(err)}
		}
	}
	target, err := client.SetUp(ctx, m.root, nodeclient.PodVolume{
		PodUID: string(pod.UID), Name: spec.dirName, Ephemeral: spec.ephemeral,
		PodNamespace: pod.Namespace, ClaimName: spec.claim,
	}, spec.volume)
	if err != nil {
		return mountedVolume{}, &csiOpError{op: "SetUp", volume: spec.dirName, err: driverError(err)}
	}
	if fsGroup, policy := podFSGroup(pod); spec.fsGroup && fsGroup != nil {
		if err := setOwnership(target, fsGroup, policy, false); err != nil {
			return mountedVolume{}, &csiOpError{op: "SetUp", volume: spec.dirName, err: fmt.Errorf("applying fsGroup %d: %w", *fsGroup, err)}
		}
	}
	m.cfg.Logger.Debug("CSI volume published", "pod", pod.Namespace+"/"+pod.Name, "volume", vol.Name, "driver", spec.driver, "handle", spec.volume.Handle, "target", target)
	return mountedVolume{path: target, readOnly: spec.volume.ReadOnly}, nil
}

// resolveCSI turns the pod's volume into the CSI calls' arguments.
func (m *Manager) resolveCSI(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (csiSpec, error) {
	if vol.CSI != nil {
		return m.resolveInline(ctx, pod, vol)
	}
	if m.cfg.Claims == nil {
		return csiSpec{}, fmt.Errorf("volume %q: persistent volume claims need an API server, and this agent has none: %w", vol.Name, errdefs.ErrUnavailable)
	}
	claimName, readOnly := "", false
	if vol.PersistentVolumeClaim != nil {
		claimName, readOnly = vol.PersistentVolumeClaim.ClaimName, vol.PersistentVolumeClaim.ReadOnly
	} else {
		claimName = pod.Name + "-" + vol.Name // the generic ephemeral volume's claim, as upstream names it
	}
	pvc, err := m.cfg.Claims.GetPersistentVolumeClaim(ctx, pod.Namespace, claimName)
	if err != nil {
		return csiSpec{}, fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, claimName, err)
	}
	if vol.Ephemeral != nil && !metav1.IsControlledBy(pvc, pod) {
		return csiSpec{}, fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner): %w", pod.Namespace, claimName, pod.Namespace, pod.Name, errdefs.ErrConflict)
	}
	if pvc.DeletionTimestamp != nil {
		return csiSpec{}, fmt.Errorf("error processing PVC %s/%s: PVC is being deleted: %w", pod.Namespace, claimName, errdefs.ErrConflict)
	}
	if pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
		return csiSpec{}, fmt.Errorf("error processing PVC %s/%s: PVC is not bound: %w", pod.Namespace, claimName, errdefs.ErrUnavailable)
	}
	pv, err := m.cfg.Claims.GetPersistentVolume(ctx, pvc.Spec.VolumeName)
	if err != nil {
		return csiSpec{}, fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, claimName, err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Name != pvc.Name || ref.Namespace != pvc.Namespace || (ref.UID != "" && ref.UID != pvc.UID) {
		return csiSpec{}, fmt.Errorf("found PV object %q but it has a ClaimRef that is not bound to claim %s/%s: %w", pv.Name, pod.Namespace, claimName, errdefs.ErrConflict)
	}
	src := pv.Spec.CSI
	if src == nil {
		return csiSpec{}, fmt.Errorf("PersistentVolume %q is not a CSI volume; berth's agent mounts only CSI persistent volumes: %w", pv.Name, errdefs.ErrUnimplemented)
	}
	volumeContext := clone(src.VolumeAttributes)
	var csiDriver *storagev1.CSIDriver // nil: no object
	if d, err := m.cfg.Claims.GetCSIDriver(ctx, src.Driver); err == nil {
		csiDriver = d
	} else if !errors.Is(err, errdefs.ErrNotFound) {
		return csiSpec{}, fmt.Errorf("CSI driver %q: %w", src.Driver, err)
	}
	if csiDriver != nil && csiDriver.Spec.PodInfoOnMount != nil && *csiDriver.Spec.PodInfoOnMount {
		volumeContext = withPodInfo(volumeContext, pod)
	}
	ro := readOnly || src.ReadOnly
	spec := csiSpec{
		driver: src.Driver, dirName: pv.Name, claim: claimName,
		fsGroup: appliesFSGroup(csiDriver, ro, src.FSType, slices.Contains(pv.Spec.AccessModes, v1.ReadWriteOnce), false),
		volume: nodeclient.Volume{
			Handle:        src.VolumeHandle,
			ReadOnly:      ro,
			FSType:        src.FSType,
			MountFlags:    pv.Spec.MountOptions,
			AccessMode:    accessMode(pv.Spec.AccessModes),
			VolumeContext: volumeContext,
		},
	}
	if spec.volume.StageSecrets, err = m.secretData(ctx, "nodeStageSecretRef", src.NodeStageSecretRef); err != nil {
		return csiSpec{}, err
	}
	if spec.volume.PublishSecrets, err = m.secretData(ctx, "nodePublishSecretRef", src.NodePublishSecretRef); err != nil {
		return csiSpec{}, err
	}
	return spec, nil
}

// resolveInline resolves a CSI ephemeral inline volume. Joined to an API
// server, the driver's CSIDriver object must list the Ephemeral lifecycle
// mode; a standalone agent takes the pod's word for it.
func (m *Manager) resolveInline(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (csiSpec, error) {
	src := vol.CSI
	if src.Driver == "" {
		return csiSpec{}, fmt.Errorf("volume %q: csi.driver: is required: %w", vol.Name, errdefs.ErrInvalidArgument)
	}
	var csiDriver *storagev1.CSIDriver // nil: standalone
	if m.cfg.Claims != nil {
		d, err := m.cfg.Claims.GetCSIDriver(ctx, src.Driver)
		switch {
		case errors.Is(err, errdefs.ErrNotFound):
			return csiSpec{}, fmt.Errorf("CSI driver %q has no CSIDriver object; an inline CSI volume needs one whose spec.volumeLifecycleModes lists %q: %w", src.Driver, storagev1.VolumeLifecycleEphemeral, errdefs.ErrInvalidArgument)
		case err != nil:
			return csiSpec{}, fmt.Errorf("CSI driver %q: %w", src.Driver, err)
		case !slices.Contains(d.Spec.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral):
			return csiSpec{}, fmt.Errorf("volume mode %q not supported by driver %s (only supports %q): %w", storagev1.VolumeLifecycleEphemeral, src.Driver, d.Spec.VolumeLifecycleModes, errdefs.ErrInvalidArgument)
		}
		csiDriver = d
	}
	volumeContext := clone(src.VolumeAttributes)
	if csiDriver != nil && csiDriver.Spec.PodInfoOnMount != nil && *csiDriver.Spec.PodInfoOnMount {
		volumeContext = withPodInfo(volumeContext, pod)
	}
	fsType := ""
	if src.FSType != nil {
		fsType = *src.FSType
	}
	ro := src.ReadOnly != nil && *src.ReadOnly
	spec := csiSpec{
		driver: src.Driver, dirName: vol.Name, ephemeral: true,
		fsGroup: appliesFSGroup(csiDriver, ro, fsType, false, true),
		volume: nodeclient.Volume{
			Handle:        nodeclient.EphemeralVolumeHandle(string(pod.UID), vol.Name),
			ReadOnly:      ro,
			FSType:        fsType,
			VolumeContext: volumeContext,
		},
	}
	if ref := src.NodePublishSecretRef; ref != nil {
		data, err := m.secretData(ctx, "nodePublishSecretRef", &v1.SecretReference{Namespace: pod.Namespace, Name: ref.Name})
		if err != nil {
			return csiSpec{}, err
		}
		spec.volume.PublishSecrets = data
	}
	return spec, nil
}

// appliesFSGroup reports whether the pod's fsGroup is applied to a
// published CSI volume, by the driver's fsGroupPolicy as the kubelet
// decides: never for read-only volumes or policy None; always for File;
// for ReadWriteOnceWithFSType (the default, also without a CSIDriver
// object) only with an fsType and a ReadWriteOnce (or inline) volume.
func appliesFSGroup(d *storagev1.CSIDriver, readOnly bool, fsType string, rwo, inline bool) bool {
	policy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	if d != nil && d.Spec.FSGroupPolicy != nil {
		policy = *d.Spec.FSGroupPolicy
	}
	switch {
	case readOnly || policy == storagev1.NoneFSGroupPolicy:
		return false
	case policy == storagev1.FileFSGroupPolicy:
		return true
	}
	return fsType != "" && (rwo || inline)
}

func withPodInfo(vc map[string]string, pod *v1.Pod) map[string]string {
	if vc == nil {
		vc = map[string]string{}
	}
	vc[podInfoName] = pod.Name
	vc[podInfoNamespace] = pod.Namespace
	vc[podInfoUID] = string(pod.UID)
	vc[podInfoServiceAccount] = pod.Spec.ServiceAccountName
	return vc
}

// secretData reads the secret a CSI source references, as strings.
func (m *Manager) secretData(ctx context.Context, field string, ref *v1.SecretReference) (map[string]string, error) {
	if ref == nil || ref.Name == "" {
		return nil, nil
	}
	if m.cfg.Objects == nil {
		return nil, fmt.Errorf("%s %s/%s: no API server to read secrets from: %w", field, ref.Namespace, ref.Name, errdefs.ErrUnavailable)
	}
	sec, err := m.cfg.Objects.GetSecret(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("fetching %s %s/%s failed: %w", field, ref.Namespace, ref.Name, err)
	}
	out := make(map[string]string, len(sec.Data)+len(sec.StringData))
	for k, v := range sec.Data {
		out[k] = string(v)
	}
	for k, v := range sec.StringData {
		out[k] = v
	}
	return out, nil
}

// accessMode maps a PV's first access mode to the CSI one, as the kubelet
// does (SINGLE_NODE_WRITER becomes SINGLE_NODE_MULTI_WRITER, and
// SINGLE_NODE_SINGLE_WRITER stays, only for drivers that understand them).
func accessMode(modes []v1.PersistentVolumeAccessMode) csi.VolumeCapability_AccessMode_Mode {
	mode := v1.ReadWriteOnce
	if len(modes) > 0 {
		mode = modes[0]
	}
	switch mode {
	case v1.ReadOnlyMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case v1.ReadWriteMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case v1.ReadWriteOncePod:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
	default:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
}

func clone(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// csiVolumeDirs lists the CSI volume directories of the pod uid under root.
func csiVolumeDirs(root string, uid types.UID) ([]string, error) {
	dir := filepath.Join(root, "pods", string(uid), "volumes", PluginCSI)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// tearDownCSI unpublishes every CSI volume of the pod (NodeUnpublishVolume
// through the driver named in its vol_data.json), then unstages
// (NodeUnstageVolume) each persistent one no other pod on the node still
// has published. A volume whose driver is not registered stays as it is
// (an error: it is retried), so nothing is ever unmounted behind a
// driver's back.
func (m *Manager) tearDownCSI(ctx context.Context, uid types.UID) error {
	dirs, err := csiVolumeDirs(m.root, uid)
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range dirs {
		if err := m.tearDownCSIVolume(ctx, uid, dir); err != nil {
			errs = append(errs, fmt.Errorf("CSI volume %s: %w", filepath.Base(dir), err))
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) tearDownCSIVolume(ctx context.Context, uid types.UID, dir string) error {
	data, err := nodeclient.ReadVolumeData(dir)
	if err != nil {
		// No record: set-up never got as far as the driver. Without a
		// mount it is only a directory.
		if mounted, merr := isMountedAt(filepath.Join(dir, "mount")); merr != nil || mounted {
			return fmt.Errorf("%w, and %s is mounted: not unmounting it without its driver", err, filepath.Join(dir, "mount"))
		}
		return removeTree(dir)
	}
	if m.cfg.CSI == nil {
		return fmt.Errorf("driver %s: this agent has no CSI plugin registry: %w", data.DriverName, errdefs.ErrUnavailable)
	}
	client, ok := m.cfg.CSI.CSIClient(data.DriverName)
	if !ok {
		return fmt.Errorf("UnmountVolume.TearDown failed: driver name %s not found in the list of registered CSI drivers: %w", data.DriverName, errdefs.ErrUnavailable)
	}
	defer m.csi.lockHandle(data.DriverName, data.VolumeHandle)()
	if err := client.TearDown(ctx, m.root, string(uid), filepath.Base(dir), data.VolumeHandle); err != nil {
		return fmt.Errorf("UnmountVolume.TearDown failed: %w", driverError(err))
	}
	m.cfg.Logger.Debug("CSI volume unpublished", "uid", uid, "volume", filepath.Base(dir), "driver", data.DriverName, "handle", data.VolumeHandle)
	if data.LifecycleMode == "Ephemeral" {
		return nil
	}
	inUse, err := m.csiInUse(data.DriverName, data.VolumeHandle)
	if err != nil {
		return err
	}
	if inUse {
		return nil
	}
	if err := client.UnmountDevice(ctx, m.root, data.VolumeHandle); err != nil {
		return fmt.Errorf("UnmountDevice failed: %w", driverError(err))
	}
	m.cfg.Logger.Debug("CSI volume unstaged", "driver", data.DriverName, "handle", data.VolumeHandle)
	return nil
}

// csiInUse reports whether any pod on the node still has the driver's
// volume published (or being published). Callers hold the handle's lock.
func (m *Manager) csiInUse(driver, handle string) (bool, error) {
	pods, err := os.ReadDir(filepath.Join(m.root, "pods"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, p := range pods {
		dirs, err := csiVolumeDirs(m.root, types.UID(p.Name()))
		if err != nil {
			return false, err
		}
		for _, dir := range dirs {
			d, err := nodeclient.ReadVolumeData(dir)
			if err == nil && d.DriverName == driver && d.VolumeHandle == handle {
				return true, nil
			}
		}
	}
	return false, nil
}

func isMountedAt(path string) (bool, error) {
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		return false, err
	}
	return mountinfo.IsMountPoint(mounts, path), nil
}

// PublishedCSIVolume is a CSI volume published into a pod on this node, as
// recorded on disk (vol_data.json).
type PublishedCSIVolume struct {
	// PodUID is the pod's UID; PodNamespace its namespace.
	PodUID       types.UID
	PodNamespace string
	// ClaimName is the PersistentVolumeClaim it came through; "" for an
	// inline volume.
	ClaimName string
	// Driver and Handle name the volume for its driver.
	Driver, Handle string
	// TargetPath is where it is published.
	TargetPath string
}

// PublishedCSIVolumes lists the CSI volumes published into pods under the
// agent root directory rootDir, from disk (vol_data.json and the mount
// table), so it is right after an agent restart too. Volumes whose target
// path is not mounted are left out.
func PublishedCSIVolumes(rootDir string) ([]PublishedCSIVolume, error) {
	root, err := filepath.EvalSymlinks(rootDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("volumes: resolve root dir: %w", err)
	}
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		return nil, fmt.Errorf("volumes: read mount table: %w", err)
	}
	pods, err := os.ReadDir(filepath.Join(root, "pods"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []PublishedCSIVolume
	for _, p := range pods {
		dirs, err := csiVolumeDirs(root, types.UID(p.Name()))
		if err != nil {
			continue
		}
		for _, dir := range dirs {
			d, err := nodeclient.ReadVolumeData(dir)
			target := filepath.Join(dir, "mount")
			if err != nil || !mountinfo.IsMountPoint(mounts, target) {
				continue
			}
			out = append(out, PublishedCSIVolume{
				PodUID: types.UID(p.Name()), PodNamespace: d.PodNamespace, ClaimName: d.ClaimName,
				Driver: d.DriverName, Handle: d.VolumeHandle, TargetPath: target,
			})
		}
	}
	return out, nil
}
