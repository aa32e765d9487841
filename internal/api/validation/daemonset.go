package validation

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateDaemonSet validates a daemon set: metadata, a non-empty selector
// matching the template labels, a valid template with restartPolicy Always
// and no activeDeadlineSeconds, minReadySeconds and revisionHistoryLimit
// ≥ 0, and the update strategy (as upstream's ValidateDaemonSetSpec).
func ValidateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&ds.ObjectMeta, true, DNSSubdomainName, metadataPath)
	specPath := field.NewPath("spec")
	spec := &ds.Spec
	selPath := specPath.Child("selector")
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
	selector, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(specPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	if spec.Selector != nil && len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(selPath, spec.Selector, "empty selector is invalid for daemonset"))
	}
	// The selector's match was checked above (also against a nil selector).
	errs = append(errs, validateReplicatedTemplate(labels.Everything(), &spec.Template, "DaemonSet", specPath.Child("template"))...)
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	errs = append(errs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, specPath.Child("updateStrategy"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*spec.RevisionHistoryLimit), specPath.Child("revisionHistoryLimit"))...)
	}
	return errs
}

func validateDaemonSetUpdateStrategy(s *appsv1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "")}
		}
		return validateRollingUpdateDaemonSet(s.RollingUpdate, fldPath.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(fldPath, s, []string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)})}
	}
}

func validateRollingUpdateDaemonSet(ru *appsv1.RollingUpdateDaemonSet, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	muPath, msPath := fldPath.Child("maxUnavailable"), fldPath.Child("maxSurge")
	errs = append(errs, validatePositiveIntOrPercent(ru.MaxUnavailable, muPath)...)
	errs = append(errs, validatePositiveIntOrPercent(ru.MaxSurge, msPath)...)
	errs = append(errs, notMoreThan100Percent(ru.MaxUnavailable, muPath)...)
	errs = append(errs, notMoreThan100Percent(ru.MaxSurge, msPath)...)
	hasUnavailable, hasSurge := intOrPercentValue(ru.MaxUnavailable) != 0, intOrPercentValue(ru.MaxSurge) != 0
	switch {
	case hasUnavailable && hasSurge:
		errs = append(errs, field.Invalid(msPath, orZero(ru.MaxSurge), "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		errs = append(errs, field.Required(muPath, "cannot be 0 when maxSurge is 0"))
	}
	return errs
}

func notMoreThan100Percent(v *intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if p, isPercent := percentValue(v); isPercent && p > 100 {
		return field.ErrorList{field.Invalid(fldPath, *v, "must not be greater than 100%")}
	}
	return nil
}

func orZero(v *intstr.IntOrString) intstr.IntOrString {
	if v == nil {
		return intstr.FromInt32(0)
	}
	return *v
}

// ValidateDaemonSetUpdate validates a daemon set update: the new daemon set
// must be valid and its selector is immutable.
func ValidateDaemonSetUpdate(newDS, oldDS *appsv1.DaemonSet) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newDS.ObjectMeta, &oldDS.ObjectMeta, metadataPath)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newDS.Spec.Selector, oldDS.Spec.Selector, field.NewPath("spec", "selector"))...)
	return append(errs, ValidateDaemonSet(newDS)...)
}

// ValidateDaemonSetStatusUpdate validates a daemonsets/status update: every
// count non-negative, collisionCount never decremented.
func ValidateDaemonSetStatusUpdate(newDS, oldDS *appsv1.DaemonSet) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newDS.ObjectMeta, &oldDS.ObjectMeta, metadataPath)
	s, p := newDS.Status, field.NewPath("status")
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"currentNumberScheduled", int64(s.CurrentNumberScheduled)}, {"numberMisscheduled", int64(s.NumberMisscheduled)},
		{"desiredNumberScheduled", int64(s.DesiredNumberScheduled)}, {"numberReady", int64(s.NumberReady)},
		{"observedGeneration", s.ObservedGeneration}, {"updatedNumberScheduled", int64(s.UpdatedNumberScheduled)},
		{"numberAvailable", int64(s.NumberAvailable)}, {"numberUnavailable", int64(s.NumberUnavailable)},
	} {
		errs = append(errs, validateNonnegative(c.v, p.Child(c.name))...)
	}
	if s.CollisionCount != nil {
		errs = append(errs, validateNonnegative(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	if old := oldDS.Status.CollisionCount; old != nil && (s.CollisionCount == nil || *s.CollisionCount < *old) {
		value := int32(0)
		if s.CollisionCount != nil {
			value = *s.CollisionCount
		}
		errs = append(errs, field.Invalid(p.Child("collisionCount"), value, "cannot be decremented"))
	}
	return errs
}

// ValidateControllerRevision validates a new controller revision: metadata,
// revision ≥ 0, and data a JSON object.
func ValidateControllerRevision(r *appsv1.ControllerRevision) field.ErrorList {
	errs := validateControllerRevisionMeta(r)
	dataPath := field.NewPath("data")
	var v any
	switch {
	case r.Data.Raw == nil:
		errs = append(errs, field.Required(dataPath, "data is mandatory"))
	case json.Unmarshal(r.Data.Raw, &v) != nil:
		err := json.Unmarshal(r.Data.Raw, &v)
		errs = append(errs, field.Invalid(dataPath, "<value omitted>", fmt.Sprintf("error parsing data: %v", err.Error())))
	case v == nil:
		errs = append(errs, field.Required(dataPath, "data is mandatory"))
	default:
		if _, isObject := v.(map[string]any); !isObject {
			errs = append(errs, field.Required(dataPath, "data must be a valid JSON object"))
		}
	}
	return errs
}

func validateControllerRevisionMeta(r *appsv1.ControllerRevision) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&r.ObjectMeta, true, DNSSubdomainName, metadataPath)
	return append(errs, validateNonnegative(r.Revision, field.NewPath("revision"))...)
}

// ValidateControllerRevisionUpdate validates a controller revision update:
// its data is immutable.
func ValidateControllerRevisionUpdate(newR, oldR *appsv1.ControllerRevision) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newR.ObjectMeta, &oldR.ObjectMeta, metadataPath)
	errs = append(errs, validateControllerRevisionMeta(newR)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(newR.Data, oldR.Data, field.NewPath("data"))...)
}
