package validation

import (
	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateReplicationController validates a core/v1 replication
// controller: metadata, minReadySeconds ≥ 0, a non-empty selector,
// replicas set and ≥ 0, and a template the selector matches with
// restartPolicy Always (as upstream's ValidateReplicationControllerSpec).
func ValidateReplicationController(rc *v1.ReplicationController) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&rc.ObjectMeta, true, DNSSubdomainName, metadataPath)
	specPath := field.NewPath("spec")
	spec := &rc.Spec
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	selector := labels.Set(spec.Selector).AsSelector()
	if selector.Empty() {
		errs = append(errs, field.Required(specPath.Child("selector"), ""))
	}
	if spec.Replicas == nil {
		errs = append(errs, field.Required(specPath.Child("replicas"), ""))
	} else {
		errs = append(errs, validateNonnegative(int64(*spec.Replicas), specPath.Child("replicas"))...)
	}
	tPath := specPath.Child("template")
	if spec.Template == nil {
		return append(errs, field.Required(tPath, ""))
	}
	return append(errs, validateReplicatedTemplate(selector, spec.Template, "ReplicationController", tPath)...)
}

// ValidateReplicationControllerUpdate validates a replication controller
// update: the new object must be valid (its selector may change, unlike a
// replica set's).
func ValidateReplicationControllerUpdate(newRC, oldRC *v1.ReplicationController) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newRC.ObjectMeta, &oldRC.ObjectMeta, metadataPath)
	return append(errs, ValidateReplicationController(newRC)...)
}

// ValidateReplicationControllerStatusUpdate validates a
// replicationcontrollers/status update: counts non-negative and consistent.
func ValidateReplicationControllerStatusUpdate(newRC, oldRC *v1.ReplicationController) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newRC.ObjectMeta, &oldRC.ObjectMeta, metadataPath)
	s := newRC.Status
	return append(errs, validateReplicaCounts(s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, s.ObservedGeneration, field.NewPath("status"))...)
}
