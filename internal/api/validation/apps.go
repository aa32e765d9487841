package validation

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const greaterThanReplicas = "cannot be greater than status.replicas"

// ValidateDeployment validates a deployment: metadata, replicas ≥ 0, a
// non-empty selector matching the template labels, a valid template with
// restartPolicy Always, the strategy rules (maxSurge and maxUnavailable not
// both 0, maxUnavailable ≤ 100%, no rollingUpdate with Recreate), and
// minReadySeconds, revisionHistoryLimit, progressDeadlineSeconds.
func ValidateDeployment(d *appsv1.Deployment) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&d.ObjectMeta, true, DNSSubdomainName, metadataPath)
	specPath := field.NewPath("spec")
	spec := &d.Spec
	if spec.Replicas != nil {
		errs = append(errs, validateNonnegative(int64(*spec.Replicas), specPath.Child("replicas"))...)
	}
	errs = append(errs, validateSelectorAndTemplate(spec.Selector, &spec.Template, "deployment", specPath)...)
	errs = append(errs, validateDeploymentStrategy(&spec.Strategy, specPath.Child("strategy"))...)
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*spec.RevisionHistoryLimit), specPath.Child("revisionHistoryLimit"))...)
	}
	if spec.ProgressDeadlineSeconds != nil {
		p := specPath.Child("progressDeadlineSeconds")
		errs = append(errs, validatePositive(int64(*spec.ProgressDeadlineSeconds), p)...)
		if *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(p, *spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

// validateSelectorAndTemplate holds the selector and template rules that
// deployments and replica sets share.
func validateSelectorAndTemplate(sel *metav1.LabelSelector, tmpl *v1.PodTemplateSpec, kind string, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	selPath := specPath.Child("selector")
	if sel == nil {
		errs = append(errs, field.Required(selPath, ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(selPath, sel, "empty selector is invalid for "+kind))
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(errs, field.Invalid(selPath, sel, "invalid label selector"))
	}
	return append(errs, validateReplicatedTemplate(selector, tmpl, "ReplicaSet", specPath.Child("template"))...)
}

// validateReplicatedTemplate holds the template rules of every controller
// that keeps replicas of a pod running (replica sets, deployments,
// replication controllers): labels selector matches, a valid template,
// restartPolicy Always and no activeDeadlineSeconds; kind names the
// controller in the last rule's message.
func validateReplicatedTemplate(selector labels.Selector, tmpl *v1.PodTemplateSpec, kind string, tPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !selector.Empty() && !selector.Matches(labels.Set(tmpl.Labels)) {
		errs = append(errs, field.Invalid(tPath.Child("metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, ValidatePodTemplateSpec(tmpl, tPath)...)
	if tmpl.Spec.RestartPolicy != v1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tPath.Child("spec", "restartPolicy"), tmpl.Spec.RestartPolicy, []string{string(v1.RestartPolicyAlways)}))
	}
	if tmpl.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return validateRollingUpdate(s.RollingUpdate, fldPath.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("type"), s.Type, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)})}
	}
	return nil
}

func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	muPath, msPath := fldPath.Child("maxUnavailable"), fldPath.Child("maxSurge")
	errs = append(errs, validatePositiveIntOrPercent(ru.MaxUnavailable, muPath)...)
	errs = append(errs, validatePositiveIntOrPercent(ru.MaxSurge, msPath)...)
	if intOrPercentValue(ru.MaxUnavailable) == 0 && intOrPercentValue(ru.MaxSurge) == 0 {
		errs = append(errs, field.Invalid(muPath, ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
	}
	if v, isPercent := percentValue(ru.MaxUnavailable); isPercent && v > 100 {
		errs = append(errs, field.Invalid(muPath, ru.MaxUnavailable, "must not be greater than 100%"))
	}
	return errs
}

func validatePositiveIntOrPercent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	switch v.Type {
	case intstr.String:
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(fldPath, v, msg))
		}
		return errs
	case intstr.Int:
		return validateNonnegative(int64(v.IntValue()), fldPath)
	default:
		return field.ErrorList{field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%')")}
	}
}

func percentValue(v *intstr.IntOrString) (int, bool) {
	if v == nil || v.Type != intstr.String || !strings.HasSuffix(v.StrVal, "%") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if err != nil {
		return 0, false
	}
	return n, true
}

func intOrPercentValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	if p, ok := percentValue(v); ok {
		return p
	}
	return v.IntValue()
}

// ValidateDeploymentUpdate validates a deployment update: the new
// deployment must be valid and the selector is immutable (apps/v1).
func ValidateDeploymentUpdate(newD, oldD *appsv1.Deployment) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newD.ObjectMeta, &oldD.ObjectMeta, metadataPath)
	errs = append(errs, ValidateDeployment(newD)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(newD.Spec.Selector, oldD.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ValidateDeploymentStatusUpdate validates a deployments/status update:
// counts non-negative and consistent with each other.
func ValidateDeploymentStatusUpdate(newD, oldD *appsv1.Deployment) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newD.ObjectMeta, &oldD.ObjectMeta, metadataPath)
	s := newD.Status
	p := field.NewPath("status")
	errs = append(errs, validateNonnegative(s.ObservedGeneration, p.Child("observedGeneration"))...)
	errs = append(errs, validateNonnegative(int64(s.Replicas), p.Child("replicas"))...)
	errs = append(errs, validateNonnegative(int64(s.UpdatedReplicas), p.Child("updatedReplicas"))...)
	errs = append(errs, validateNonnegative(int64(s.ReadyReplicas), p.Child("readyReplicas"))...)
	errs = append(errs, validateNonnegative(int64(s.AvailableReplicas), p.Child("availableReplicas"))...)
	errs = append(errs, validateNonnegative(int64(s.UnavailableReplicas), p.Child("unavailableReplicas"))...)
	if s.CollisionCount != nil {
		errs = append(errs, validateNonnegative(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	if s.UpdatedReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("updatedReplicas"), s.UpdatedReplicas, greaterThanReplicas))
	}
	if s.ReadyReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), s.ReadyReplicas, greaterThanReplicas))
	}
	if s.AvailableReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, greaterThanReplicas))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}

// ValidateReplicaSet validates a replica set: metadata, replicas ≥ 0,
// minReadySeconds ≥ 0, a non-empty selector matching the template labels,
// and a valid template with restartPolicy Always.
func ValidateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&rs.ObjectMeta, true, DNSSubdomainName, metadataPath)
	specPath := field.NewPath("spec")
	if rs.Spec.Replicas != nil {
		errs = append(errs, validateNonnegative(int64(*rs.Spec.Replicas), specPath.Child("replicas"))...)
	}
	errs = append(errs, validateNonnegative(int64(rs.Spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	// Upstream's message names "deployment" for replica sets too.
	return append(errs, validateSelectorAndTemplate(rs.Spec.Selector, &rs.Spec.Template, "deployment", specPath)...)
}

// ValidateReplicaSetUpdate validates a replica set update: the new replica
// set must be valid and the selector is immutable (apps/v1).
func ValidateReplicaSetUpdate(newRS, oldRS *appsv1.ReplicaSet) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newRS.ObjectMeta, &oldRS.ObjectMeta, metadataPath)
	errs = append(errs, ValidateReplicaSet(newRS)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(newRS.Spec.Selector, oldRS.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ValidateReplicaSetStatusUpdate validates a replicasets/status update.
func ValidateReplicaSetStatusUpdate(newRS, oldRS *appsv1.ReplicaSet) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newRS.ObjectMeta, &oldRS.ObjectMeta, metadataPath)
	s := newRS.Status
	return append(errs, validateReplicaCounts(s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, s.ObservedGeneration, field.NewPath("status"))...)
}

// validateReplicaCounts checks the status counts replica sets and
// replication controllers share: each non-negative, none above replicas,
// available not above ready.
func validateReplicaCounts(replicas, fullyLabeled, ready, available int32, observedGeneration int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateNonnegative(int64(replicas), p.Child("replicas"))...)
	errs = append(errs, validateNonnegative(int64(fullyLabeled), p.Child("fullyLabeledReplicas"))...)
	errs = append(errs, validateNonnegative(int64(ready), p.Child("readyReplicas"))...)
	errs = append(errs, validateNonnegative(int64(available), p.Child("availableReplicas"))...)
	errs = append(errs, validateNonnegative(observedGeneration, p.Child("observedGeneration"))...)
	if fullyLabeled > replicas {
		errs = append(errs, field.Invalid(p.Child("fullyLabeledReplicas"), fullyLabeled, greaterThanReplicas))
	}
	if ready > replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), ready, greaterThanReplicas))
	}
	if available > replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), available, greaterThanReplicas))
	}
	if available > ready {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), available, "cannot be greater than readyReplicas"))
	}
	return errs
}

// ValidateScale validates a /scale request: spec.replicas ≥ 0.
func ValidateScale(scale *autoscalingv1.Scale) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&scale.ObjectMeta, true, DNSSubdomainName, metadataPath)
	return append(errs, validateNonnegative(int64(scale.Spec.Replicas), field.NewPath("spec", "replicas"))...)
}
