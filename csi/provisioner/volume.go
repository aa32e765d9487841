package provisioner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"berth/internal/errdefs"
)

// StorageClass parameters the provisioner reads itself instead of passing
// them to CreateVolume (the external-provisioner's reserved prefix).
const (
	ParamPrefix = "csi.storage.k8s.io/"
	ParamFSType = ParamPrefix + "fstype"
)

// VolumeName is the name of the PersistentVolume (and of the CSI volume)
// provisioned for a claim: "pvc-<claim UID>".
func VolumeName(claim *corev1.PersistentVolumeClaim) string {
	return "pvc-" + string(claim.UID)
}

// CreateRequest builds the CreateVolume request for a claim of class:
// capacity from the claim's storage request, a mount capability (with the
// fsType parameter and the class's mount options) or a block one, the
// access modes mapped to CSI's, the class parameters without the reserved
// csi.storage.k8s.io/ ones, and the accessibility requirements.
func CreateRequest(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, topo *csi.TopologyRequirement) (*csi.CreateVolumeRequest, error) {
	req := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if req.Sign() <= 0 {
		return nil, fmt.Errorf("claim %s/%s: spec.resources.requests.storage must be positive: %w", claim.Namespace, claim.Name, errdefs.ErrInvalidArgument)
	}
	if len(claim.Spec.AccessModes) == 0 {
		return nil, fmt.Errorf("claim %s/%s: spec.accessModes must not be empty: %w", claim.Namespace, claim.Name, errdefs.ErrInvalidArgument)
	}
	params := map[string]string{}
	for k, v := range class.Parameters {
		if !strings.HasPrefix(k, ParamPrefix) {
			params[k] = v
		}
	}
	var caps []*csi.VolumeCapability
	for _, m := range claim.Spec.AccessModes {
		mode, err := accessMode(m)
		if err != nil {
			return nil, fmt.Errorf("claim %s/%s: spec.accessModes: %w", claim.Namespace, claim.Name, err)
		}
		c := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode}}
		if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock {
			c.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
		} else {
			c.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
				FsType: class.Parameters[ParamFSType], MountFlags: class.MountOptions,
			}}
		}
		caps = append(caps, c)
	}
	return &csi.CreateVolumeRequest{
		Name:                      VolumeName(claim),
		CapacityRange:             &csi.CapacityRange{RequiredBytes: req.Value()},
		VolumeCapabilities:        caps,
		Parameters:                params,
		AccessibilityRequirements: topo,
	}, nil
}

// accessMode maps a Kubernetes access mode to CSI's, as the
// external-provisioner does for a driver without the single-node
// multi-writer capability.
func accessMode(m corev1.PersistentVolumeAccessMode) (csi.VolumeCapability_AccessMode_Mode, error) {
	switch m {
	case corev1.ReadWriteOnce:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, nil
	case corev1.ReadWriteOncePod:
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, nil
	case corev1.ReadOnlyMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, nil
	case corev1.ReadWriteMany:
		return csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, nil
	}
	return 0, fmt.Errorf("unknown access mode %q: %w", m, errdefs.ErrInvalidArgument)
}

// BuildVolume returns the PersistentVolume for a volume the driver created
// for claim: spec.csi (driver, volume handle, fsType, the volume context as
// volumeAttributes), the claim's access modes and volume mode, the created
// capacity (the request when the driver reports none), a claimRef to the
// claim, the class's reclaim policy (default Delete), mount options and
// name, node affinity from the volume's accessible topology, and the
// pv.kubernetes.io/provisioned-by annotation naming the driver.
func BuildVolume(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string, vol *csi.Volume) *corev1.PersistentVolume {
	capacity := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if b := vol.GetCapacityBytes(); b > 0 {
		capacity = *resource.NewQuantity(b, resource.BinarySI)
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	mode := corev1.PersistentVolumeFilesystem
	if claim.Spec.VolumeMode != nil {
		mode = *claim.Spec.VolumeMode
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        VolumeName(claim),
			Annotations: map[string]string{storagehelpers.AnnDynamicallyProvisioned: driver},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: capacity},
			AccessModes: slices.Clone(claim.Spec.AccessModes),
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion,
			},
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			MountOptions:                  slices.Clone(class.MountOptions),
			VolumeMode:                    &mode,
			NodeAffinity:                  nodeAffinity(vol.GetAccessibleTopology()),
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:           driver,
				VolumeHandle:     vol.GetVolumeId(),
				FSType:           class.Parameters[ParamFSType],
				VolumeAttributes: vol.GetVolumeContext(),
			}},
		},
	}
	if mode == corev1.PersistentVolumeBlock {
		pv.Spec.CSI.FSType = ""
	}
	return pv
}

// nodeAffinity turns accessible topologies into a required node selector:
// one term per topology, each segment an In expression on its key.
func nodeAffinity(topos []*csi.Topology) *corev1.VolumeNodeAffinity {
	var terms []corev1.NodeSelectorTerm
	for _, t := range topos {
		if len(t.GetSegments()) == 0 {
			continue
		}
		var term corev1.NodeSelectorTerm
		for _, k := range slices.Sorted(maps.Keys(t.GetSegments())) {
			term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{
				Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{t.GetSegments()[k]},
			})
		}
		terms = append(terms, term)
	}
	if len(terms) == 0 {
		return nil
	}
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: terms}}
}
