package validation

import (
	"math"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's bounds on a VolumeAttachment's status.
const (
	maxAttachmentMetadataSize = 256 * (1 << 10)
	maxVolumeErrorMessageSize = 1024
)

// inlineOnly is upstream's message for PV fields an inline volume spec
// may not carry.
const inlineOnly = "may not be specified in the context of inline volumes"

// ValidateVolumeAttachment validates a storage.k8s.io/v1 VolumeAttachment:
// a CSI driver name as attacher, exactly one of persistentVolumeName (a
// valid PV name) and inlineVolumeSpec (a CSI volume with none of the
// PV-only fields), a valid node name, and the status bounds.
func ValidateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&va.ObjectMeta, false, DNSSubdomainName, metadataPath)
	specPath := field.NewPath("spec")
	if va.Spec.Attacher == "" {
		errs = append(errs, field.Required(specPath.Child("attacher"), ""))
	}
	errs = append(errs, validateCSIDriverName(va.Spec.Attacher, specPath.Child("attacher"))...)
	src, srcPath := va.Spec.Source, specPath.Child("source")
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		errs = append(errs, field.Required(srcPath, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		errs = append(errs, field.Forbidden(srcPath, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil:
		if *src.PersistentVolumeName == "" {
			errs = append(errs, field.Required(srcPath.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
		}
		for _, msg := range DNSSubdomainName(*src.PersistentVolumeName, false) {
			errs = append(errs, field.Invalid(srcPath.Child("persistentVolumeName"), *src.PersistentVolumeName, msg))
		}
	default:
		errs = append(errs, validateInlineVolumeSpec(src.InlineVolumeSpec, srcPath.Child("inlineVolumeSpec"))...)
	}
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		errs = append(errs, field.Invalid(specPath.Child("nodeName"), va.Spec.NodeName, msg))
	}
	return append(errs, validateVolumeAttachmentStatus(&va.Status, field.NewPath("status"))...)
}

// validateInlineVolumeSpec validates a PV spec carried inline (CSI
// migration): access modes, a CSI source, nothing a PersistentVolume alone
// may have.
func validateInlineVolumeSpec(spec *v1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.ClaimRef != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("claimRef"), inlineOnly))
	}
	if len(spec.Capacity) != 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("capacity"), inlineOnly))
	}
	if spec.CSI == nil {
		errs = append(errs, field.Required(fldPath.Child("csi"), "has to be specified in the context of inline volumes"))
	}
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(fldPath.Child("accessModes"), ""))
	}
	errs = append(errs, validateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))...)
	if p := spec.PersistentVolumeReclaimPolicy; p != "" && p != v1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may only be "+string(v1.PersistentVolumeReclaimRetain)+" in the context of inline volumes"))
	}
	if spec.NodeAffinity != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("nodeAffinity"), inlineOnly))
	}
	if spec.StorageClassName != "" {
		errs = append(errs, field.Forbidden(fldPath.Child("storageClassName"), inlineOnly))
	}
	if m := spec.VolumeMode; m != nil && *m != v1.PersistentVolumeFilesystem {
		errs = append(errs, field.Forbidden(fldPath.Child("volumeMode"), "may not specify volumeMode other than "+string(v1.PersistentVolumeFilesystem)+" in the context of inline volumes"))
	}
	if spec.CSI != nil {
		errs = append(errs, validatePVSource(&spec.PersistentVolumeSource, false, fldPath)...)
	}
	return errs
}

func validateVolumeAttachmentStatus(st *storagev1.VolumeAttachmentStatus, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for k, v := range st.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachmentMetadataSize {
		errs = append(errs, field.TooLong(fldPath.Child("attachmentMetadata"), "", maxAttachmentMetadataSize))
	}
	for _, e := range []struct {
		name string
		err  *storagev1.VolumeError
	}{{"attachError", st.AttachError}, {"detachError", st.DetachError}} {
		if e.err == nil {
			continue
		}
		p := fldPath.Child(e.name)
		if len(e.err.Message) > maxVolumeErrorMessageSize {
			errs = append(errs, field.TooLong(p.Child("message"), "", maxAttachmentMetadataSize))
		}
		if c := e.err.ErrorCode; c != nil && *c < 0 {
			errs = append(errs, field.Invalid(p.Child("errorCode"), *c, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
	}
	return errs
}

// ValidateVolumeAttachmentUpdate validates an update (of the object or its
// status): the new object must be valid and the spec may not change.
func ValidateVolumeAttachmentUpdate(newVA, oldVA *storagev1.VolumeAttachment) field.ErrorList {
	errs := ValidateVolumeAttachment(newVA)
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&newVA.ObjectMeta, &oldVA.ObjectMeta, metadataPath)...)
	if !apiequality.Semantic.DeepEqual(newVA.Spec, oldVA.Spec) {
		errs = append(errs, field.Invalid(field.NewPath("spec"), newVA.Spec, "field is immutable"))
	}
	return errs
}

// ValidateCSIStorageCapacity validates a CSIStorageCapacity: a valid
// nodeTopology label selector, a storage class name, a non-negative
// capacity.
func ValidateCSIStorageCapacity(c *storagev1.CSIStorageCapacity) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, true, DNSSubdomainName, metadataPath)
	errs = append(errs, metav1validation.ValidateLabelSelector(c.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("nodeTopology"))...)
	for _, msg := range DNSSubdomainName(c.StorageClassName, false) {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if c.Capacity != nil && c.Capacity.Sign() < 0 {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), isNegativeErrorMsg))
	}
	return errs
}

// ValidateCSIStorageCapacityUpdate: the new object must be valid, and the
// inputs of the CSI GetCapacity call (nodeTopology, storageClassName) may
// not change.
func ValidateCSIStorageCapacityUpdate(newC, oldC *storagev1.CSIStorageCapacity) field.ErrorList {
	errs := ValidateCSIStorageCapacity(newC)
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&newC.ObjectMeta, &oldC.ObjectMeta, metadataPath)...)
	if !apiequality.Semantic.DeepEqual(newC.NodeTopology, oldC.NodeTopology) {
		errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), newC.NodeTopology, "field is immutable"))
	}
	if newC.StorageClassName != oldC.StorageClassName {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), newC.StorageClassName, "field is immutable"))
	}
	return errs
}
