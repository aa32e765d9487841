package validation

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedAccessModes = sets.New(string(v1.ReadWriteOnce), string(v1.ReadOnlyMany), string(v1.ReadWriteMany), string(v1.ReadWriteOncePod))

func validateAccessModes(modes []v1.PersistentVolumeAccessMode, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	hasRWOP := false
	for _, m := range modes {
		if !supportedAccessModes.Has(string(m)) {
			errs = append(errs, field.NotSupported(fldPath, m, sets.List(supportedAccessModes)))
		}
		if m == v1.ReadWriteOncePod {
			hasRWOP = true
		}
	}
	if hasRWOP && len(modes) > 1 {
		errs = append(errs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func validateVolumeMode(mode *v1.PersistentVolumeMode, fldPath *field.Path) field.ErrorList {
	if mode != nil && *mode != v1.PersistentVolumeBlock && *mode != v1.PersistentVolumeFilesystem {
		return field.ErrorList{field.NotSupported(fldPath, *mode, []string{string(v1.PersistentVolumeBlock), string(v1.PersistentVolumeFilesystem)})}
	}
	return nil
}

// ValidatePersistentVolume validates a persistent volume: access modes,
// a storage capacity > 0, a supported reclaim policy, exactly one volume
// source (hostPath, local, csi, nfs, …) with its required fields, a valid
// storage class name, volume mode and node affinity.
func ValidatePersistentVolume(pv *v1.PersistentVolume) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&pv.ObjectMeta, false, DNSSubdomainName, metadataPath)
	specPath := field.NewPath("spec")
	spec := &pv.Spec
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(specPath.Child("accessModes"), ""))
	}
	errs = append(errs, validateAccessModes(spec.AccessModes, specPath.Child("accessModes"))...)
	capPath := specPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		errs = append(errs, field.Required(capPath, ""))
	} else if _, ok := spec.Capacity[v1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		errs = append(errs, field.NotSupported(capPath, spec.Capacity, []string{string(v1.ResourceStorage)}))
	}
	for name, q := range spec.Capacity {
		if q.Sign() <= 0 {
			errs = append(errs, field.Invalid(capPath.Key(string(name)), q.String(), isNotPositiveErrorMsg))
		}
	}
	switch spec.PersistentVolumeReclaimPolicy {
	case v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimRecycle, v1.PersistentVolumeReclaimDelete, "":
	default:
		errs = append(errs, field.NotSupported(specPath.Child("persistentVolumeReclaimPolicy"), spec.PersistentVolumeReclaimPolicy,
			[]string{string(v1.PersistentVolumeReclaimDelete), string(v1.PersistentVolumeReclaimRecycle), string(v1.PersistentVolumeReclaimRetain)}))
	}
	if spec.StorageClassName != "" {
		errs = append(errs, validateDNS1123Subdomain(spec.StorageClassName, specPath.Child("storageClassName"))...)
	}
	errs = append(errs, validateVolumeMode(spec.VolumeMode, specPath.Child("volumeMode"))...)
	if na := spec.NodeAffinity; na != nil {
		if na.Required == nil {
			errs = append(errs, field.Required(specPath.Child("nodeAffinity", "required"), ""))
		} else {
			errs = append(errs, ValidateNodeSelector(na.Required, specPath.Child("nodeAffinity", "required"))...)
		}
	}
	errs = append(errs, validatePVSource(&spec.PersistentVolumeSource, spec.NodeAffinity != nil, specPath)...)
	return errs
}

func validatePVSource(src *v1.PersistentVolumeSource, hasAffinity bool, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(name string, set bool, validate func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(specPath.Child(name), moreThanOneVolumeType))
			return
		}
		n++
		if validate != nil {
			errs = append(errs, validate(specPath.Child(name))...)
		}
	}
	one("hostPath", src.HostPath != nil, func(p *field.Path) field.ErrorList {
		if src.HostPath.Path == "" {
			return field.ErrorList{field.Required(p.Child("path"), "")}
		}
		return validatePathNoBacksteps(src.HostPath.Path, p.Child("path"))
	})
	one("local", src.Local != nil, func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if src.Local.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else {
			errs = append(errs, validatePathNoBacksteps(src.Local.Path, p.Child("path"))...)
		}
		if !hasAffinity {
			errs = append(errs, field.Required(metadataPath.Child("annotations"), "Local volume requires node affinity"))
		}
		return errs
	})
	one("csi", src.CSI != nil, func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if src.CSI.Driver == "" {
			errs = append(errs, field.Required(p.Child("driver"), ""))
		} else {
			errs = append(errs, validateCSIDriverName(src.CSI.Driver, p.Child("driver"))...)
		}
		if src.CSI.VolumeHandle == "" {
			errs = append(errs, field.Required(p.Child("volumeHandle"), ""))
		}
		return errs
	})
	one("nfs", src.NFS != nil, func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if src.NFS.Server == "" {
			errs = append(errs, field.Required(p.Child("server"), ""))
		}
		if src.NFS.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		} else if !strings.HasPrefix(src.NFS.Path, "/") {
			errs = append(errs, field.Invalid(p.Child("path"), src.NFS.Path, "must be an absolute path"))
		}
		return errs
	})
	for _, other := range []struct {
		name string
		set  bool
	}{
		{"gcePersistentDisk", src.GCEPersistentDisk != nil}, {"awsElasticBlockStore", src.AWSElasticBlockStore != nil},
		{"iscsi", src.ISCSI != nil}, {"glusterfs", src.Glusterfs != nil}, {"rbd", src.RBD != nil}, {"flexVolume", src.FlexVolume != nil},
		{"cinder", src.Cinder != nil}, {"cephfs", src.CephFS != nil}, {"flocker", src.Flocker != nil}, {"fc", src.FC != nil},
		{"azureFile", src.AzureFile != nil}, {"vsphereVolume", src.VsphereVolume != nil}, {"quobyte", src.Quobyte != nil},
		{"azureDisk", src.AzureDisk != nil}, {"photonPersistentDisk", src.PhotonPersistentDisk != nil}, {"portworxVolume", src.PortworxVolume != nil},
		{"scaleIO", src.ScaleIO != nil}, {"storageos", src.StorageOS != nil},
	} {
		one(other.name, other.set, nil)
	}
	if n == 0 {
		errs = append(errs, field.Required(specPath, "must specify a volume type"))
	}
	return errs
}

// ValidatePersistentVolumeUpdate: the volume source is immutable after
// creation, and so are volumeMode and a set node affinity.
func ValidatePersistentVolumeUpdate(newPV, oldPV *v1.PersistentVolume) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPV.ObjectMeta, &oldPV.ObjectMeta, metadataPath)
	errs = append(errs, ValidatePersistentVolume(newPV)...)
	if !apiequality.Semantic.DeepEqual(newPV.Spec.PersistentVolumeSource, oldPV.Spec.PersistentVolumeSource) {
		diff := cmp.Diff(oldPV.Spec.PersistentVolumeSource, newPV.Spec.PersistentVolumeSource)
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), fmt.Sprintf("spec.persistentvolumesource is immutable after creation\n%v", diff)))
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newPV.Spec.VolumeMode, oldPV.Spec.VolumeMode, field.NewPath("spec", "volumeMode"))...)
	if oldPV.Spec.NodeAffinity != nil {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(newPV.Spec.NodeAffinity, oldPV.Spec.NodeAffinity, field.NewPath("spec", "nodeAffinity"))...)
	}
	return errs
}

var supportedPVPhases = []string{string(v1.VolumePending), string(v1.VolumeAvailable), string(v1.VolumeBound), string(v1.VolumeReleased), string(v1.VolumeFailed)}

// ValidatePersistentVolumeStatusUpdate validates a PV status update (a
// supported phase).
func ValidatePersistentVolumeStatusUpdate(newPV, oldPV *v1.PersistentVolume) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPV.ObjectMeta, &oldPV.ObjectMeta, metadataPath)
	if p := newPV.Status.Phase; p != "" && !sets.New(supportedPVPhases...).Has(string(p)) {
		errs = append(errs, field.NotSupported(field.NewPath("status", "phase"), p, supportedPVPhases))
	}
	return errs
}

// ValidatePersistentVolumeClaim validates a claim: at least one access
// mode, a positive storage request, valid selector, storage class name and
// volume mode.
func ValidatePersistentVolumeClaim(pvc *v1.PersistentVolumeClaim) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&pvc.ObjectMeta, true, DNSSubdomainName, metadataPath)
	return append(errs, validatePVCSpec(&pvc.Spec, field.NewPath("spec"))...)
}

func validatePVCSpec(spec *v1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(fldPath.Child("accessModes"), "at least 1 access mode is required"))
	}
	errs = append(errs, validateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))...)
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	storagePath := fldPath.Child("resources").Key(string(v1.ResourceStorage))
	if q, ok := spec.Resources.Requests[v1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(storagePath, q.String(), isNotPositiveErrorMsg))
	}
	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		errs = append(errs, validateDNS1123Subdomain(*spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	return append(errs, validateVolumeMode(spec.VolumeMode, fldPath.Child("volumeMode"))...)
}

// ValidatePersistentVolumeClaimUpdate: the spec is immutable except that a
// bound claim's storage request may grow, volumeAttributesClassName may
// change, and volumeName may be set once.
func ValidatePersistentVolumeClaimUpdate(newPVC, oldPVC *v1.PersistentVolumeClaim) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPVC.ObjectMeta, &oldPVC.ObjectMeta, metadataPath)
	errs = append(errs, ValidatePersistentVolumeClaim(newPVC)...)
	newSpec, oldSpec := newPVC.Spec.DeepCopy(), oldPVC.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}
	if newPVC.Status.Phase == v1.ClaimBound && newSpec.Resources.Requests != nil {
		if q, ok := oldSpec.Resources.Requests[v1.ResourceStorage]; ok {
			newSpec.Resources.Requests[v1.ResourceStorage] = q
		}
	}
	newSpec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
	if !apiequality.Semantic.DeepEqual(*newSpec, *oldSpec) {
		diff := cmp.Diff(*oldSpec, *newSpec)
		errs = append(errs, field.Forbidden(field.NewPath("spec"), fmt.Sprintf("spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n%v", diff)))
	}
	newSize, oldSize := newPVC.Spec.Resources.Requests[v1.ResourceStorage], oldPVC.Spec.Resources.Requests[v1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than previous value"))
	}
	return errs
}

// ValidatePersistentVolumeClaimStatusUpdate validates a claim status update.
func ValidatePersistentVolumeClaimStatusUpdate(newPVC, oldPVC *v1.PersistentVolumeClaim) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newPVC.ObjectMeta, &oldPVC.ObjectMeta, metadataPath)
	errs = append(errs, validateAccessModes(newPVC.Status.AccessModes, field.NewPath("status", "accessModes"))...)
	for name, q := range newPVC.Status.Capacity {
		errs = append(errs, validateResourceQuantityValue(string(name), q, field.NewPath("status", "capacity").Key(string(name)))...)
	}
	return errs
}

const maxProvisionerParameters = 512

// ValidateStorageClass validates a storage class: a required provisioner
// (a qualified name), at most 512 non-empty parameters, supported reclaim
// policy and volume binding mode.
func ValidateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&sc.ObjectMeta, false, DNSSubdomainName, metadataPath)
	pp := field.NewPath("provisioner")
	if sc.Provisioner == "" {
		errs = append(errs, field.Required(pp, sc.Provisioner))
	} else {
		errs = append(errs, validateQualifiedName(strings.ToLower(sc.Provisioner), pp)...)
	}
	paramsPath := field.NewPath("parameters")
	if len(sc.Parameters) > maxProvisionerParameters {
		errs = append(errs, field.TooMany(paramsPath, len(sc.Parameters), maxProvisionerParameters))
	}
	for k := range sc.Parameters {
		if k == "" {
			errs = append(errs, field.Invalid(paramsPath, k, "field can not be empty."))
		}
	}
	if p := sc.ReclaimPolicy; p != nil && *p != v1.PersistentVolumeReclaimDelete && *p != v1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *p, []string{string(v1.PersistentVolumeReclaimDelete), string(v1.PersistentVolumeReclaimRetain)}))
	}
	mp := field.NewPath("volumeBindingMode")
	if m := sc.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(mp, ""))
	} else if *m != storagev1.VolumeBindingImmediate && *m != storagev1.VolumeBindingWaitForFirstConsumer {
		errs = append(errs, field.NotSupported(mp, *m, []string{string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer)}))
	}
	return errs
}

// ValidateStorageClassUpdate: parameters, provisioner, reclaimPolicy and
// volumeBindingMode cannot change.
func ValidateStorageClassUpdate(newSC, oldSC *storagev1.StorageClass) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newSC.ObjectMeta, &oldSC.ObjectMeta, metadataPath)
	errs = append(errs, ValidateStorageClass(newSC)...)
	if !reflect.DeepEqual(newSC.Parameters, oldSC.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if newSC.Provisioner != oldSC.Provisioner {
		errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if !reflect.DeepEqual(newSC.ReclaimPolicy, oldSC.ReclaimPolicy) {
		errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	return append(errs, apimachineryvalidation.ValidateImmutableField(newSC.VolumeBindingMode, oldSC.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}

const csiDriverNameMaxLength = 63

func validateCSIDriverName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		return append(errs, field.Required(fldPath, name))
	}
	if len(name) > csiDriverNameMaxLength {
		errs = append(errs, field.TooLong(fldPath, name, csiDriverNameMaxLength))
	}
	return append(errs, validateDNS1123Subdomain(strings.ToLower(name), fldPath)...)
}

// ValidateCSIDriver validates a CSIDriver: a valid driver name (≤ 63
// characters), the defaulted booleans present, supported fsGroupPolicy and
// volume lifecycle modes, unique token request audiences.
func ValidateCSIDriver(d *storagev1.CSIDriver) field.ErrorList {
	errs := validateCSIDriverName(d.Name, metadataPath.Child("name"))
	errs = append(errs, apimachineryvalidation.ValidateObjectMeta(&d.ObjectMeta, false, func(string, bool) []string { return nil }, metadataPath)...)
	specPath := field.NewPath("spec")
	if d.Spec.AttachRequired == nil {
		errs = append(errs, field.Required(specPath.Child("attachedRequired"), ""))
	}
	if d.Spec.PodInfoOnMount == nil {
		errs = append(errs, field.Required(specPath.Child("podInfoOnMount"), ""))
	}
	if p := d.Spec.FSGroupPolicy; p != nil {
		switch *p {
		case storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy:
		default:
			errs = append(errs, field.NotSupported(specPath.Child("fsGroupPolicy"), *p, []string{string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy), string(storagev1.FileFSGroupPolicy), string(storagev1.NoneFSGroupPolicy)}))
		}
	}
	for i, m := range d.Spec.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(specPath.Child("volumeLifecycleModes").Index(i), m, []string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}))
		}
	}
	audiences := sets.New[string]()
	for i, tr := range d.Spec.TokenRequests {
		p := specPath.Child("tokenRequests").Index(i)
		if audiences.Has(tr.Audience) {
			errs = append(errs, field.Duplicate(p.Child("audience"), tr.Audience))
		}
		audiences.Insert(tr.Audience)
		if tr.ExpirationSeconds != nil && *tr.ExpirationSeconds < 600 {
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *tr.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
		}
	}
	return errs
}

// ValidateCSIDriverUpdate validates a CSIDriver update: attachRequired and
// volumeLifecycleModes cannot change.
func ValidateCSIDriverUpdate(newD, oldD *storagev1.CSIDriver) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newD.ObjectMeta, &oldD.ObjectMeta, metadataPath)
	errs = append(errs, ValidateCSIDriver(newD)...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newD.Spec.AttachRequired, oldD.Spec.AttachRequired, field.NewPath("spec", "attachRequired"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(newD.Spec.VolumeLifecycleModes, oldD.Spec.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
}

const csiNodeIDMaxLength = 256

// ValidateCSINode validates a CSINode: each driver named validly and
// uniquely, with a nodeID of at most 256 characters, qualified topology
// keys and a non-negative allocatable count.
func ValidateCSINode(n *storagev1.CSINode) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&n.ObjectMeta, false, DNSSubdomainName, metadataPath)
	drvPath := field.NewPath("spec", "drivers")
	names := sets.New[string]()
	for i, d := range n.Spec.Drivers {
		p := drvPath.Index(i)
		errs = append(errs, validateCSIDriverName(d.Name, p.Child("name"))...)
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		if d.NodeID == "" {
			errs = append(errs, field.Required(p.Child("nodeID"), ""))
		} else if len(d.NodeID) > csiNodeIDMaxLength {
			errs = append(errs, field.Invalid(p.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		for j, k := range d.TopologyKeys {
			if k == "" {
				errs = append(errs, field.Required(p.Child("topologyKeys").Index(j), ""))
				continue
			}
			errs = append(errs, validateQualifiedName(k, p.Child("topologyKeys").Index(j))...)
		}
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			errs = append(errs, validateNonnegative(int64(*d.Allocatable.Count), p.Child("allocatable", "count"))...)
		}
	}
	return errs
}

// ValidateCSINodeUpdate: a driver's nodeID and topologyKeys cannot change
// while the driver stays registered.
func ValidateCSINodeUpdate(newN, oldN *storagev1.CSINode) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newN.ObjectMeta, &oldN.ObjectMeta, metadataPath)
	errs = append(errs, ValidateCSINode(newN)...)
	old := map[string]storagev1.CSINodeDriver{}
	for _, d := range oldN.Spec.Drivers {
		old[d.Name] = d
	}
	for i, d := range newN.Spec.Drivers {
		o, ok := old[d.Name]
		if !ok {
			continue
		}
		p := field.NewPath("spec", "drivers").Index(i)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(d.NodeID, o.NodeID, p.Child("nodeID"))...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(d.TopologyKeys, o.TopologyKeys, p.Child("topologyKeys"))...)
	}
	return errs
}
