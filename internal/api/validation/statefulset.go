package validation

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// statefulSetOptions relaxes ValidateStatefulSetSpec on update (upstream's
// StatefulSetValidationOptions).
type statefulSetOptions struct {
	// allowInvalidServiceName: serviceName is immutable, so an old invalid
	// one is kept.
	allowInvalidServiceName bool
	// skipTemplate skips the pod template's own validation (an old
	// stateful set whose template no longer validates may still be
	// updated).
	skipTemplate bool
	// skipClaimTemplates: volumeClaimTemplates are immutable.
	skipClaimTemplates bool
}

// ValidateStatefulSet validates a new stateful set: a DNS-1123 label name
// and the spec (as upstream's ValidateStatefulSet).
func ValidateStatefulSet(ss *appsv1.StatefulSet) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&ss.ObjectMeta, true, DNSLabelName, metadataPath)
	return append(errs, validateStatefulSetSpec(&ss.Spec, field.NewPath("spec"), statefulSetOptions{})...)
}

// validateStatefulSetSpec checks the pod management policy, update
// strategy, PVC retention policy, claim templates, replicas,
// minReadySeconds, ordinals, serviceName, selector and template (with the
// claim templates' volumes added and hostname/subdomain ignored, as the
// controller sets them), restartPolicy Always and no activeDeadlineSeconds.
func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, fldPath *field.Path, opts statefulSetOptions) field.ErrorList {
	var errs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(fldPath.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(fldPath.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	switch spec.UpdateStrategy.Type {
	case "":
		errs = append(errs, field.Required(fldPath.Child("updateStrategy"), ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if spec.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(fldPath.Child("updateStrategy", "rollingUpdate"), spec.UpdateStrategy.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := spec.UpdateStrategy.RollingUpdate; ru != nil {
			errs = append(errs, validateRollingUpdateStatefulSet(ru, fldPath.Child("updateStrategy", "rollingUpdate"))...)
		}
	default:
		errs = append(errs, field.Invalid(fldPath.Child("updateStrategy"), spec.UpdateStrategy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		rp := fldPath.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, validateRetentionPolicyType(p.WhenDeleted, rp.Child("whenDeleted"))...)
		errs = append(errs, validateRetentionPolicyType(p.WhenScaled, rp.Child("whenScaled"))...)
	}
	if !opts.skipClaimTemplates {
		for i := range spec.VolumeClaimTemplates {
			errs = append(errs, validatePVCSpec(&spec.VolumeClaimTemplates[i].Spec, fldPath.Child("volumeClaimTemplates").Index(i).Child("spec"))...)
		}
	}
	if spec.Replicas != nil {
		errs = append(errs, validateNonnegative(int64(*spec.Replicas), fldPath.Child("replicas"))...)
	}
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		errs = append(errs, validateNonnegative(int64(spec.Ordinals.Start), fldPath.Child("ordinals.start"))...)
	}
	if !opts.allowInvalidServiceName && spec.ServiceName != "" {
		errs = append(errs, validateDNS1123Label(spec.ServiceName, fldPath.Child("serviceName"))...)
	}
	selPath := fldPath.Child("selector")
	if spec.Selector == nil {
		errs = append(errs, field.Required(selPath, ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(selPath, spec.Selector, "empty selector is invalid for statefulset"))
		}
	}
	tPath := fldPath.Child("template")
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		errs = append(errs, field.Invalid(selPath, spec.Selector, ""))
	} else {
		tmpl := templateToValidate(spec)
		if !selector.Empty() && !selector.Matches(labels.Set(tmpl.Labels)) {
			errs = append(errs, field.Invalid(tPath.Child("metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`"))
		}
		if !opts.skipTemplate {
			errs = append(errs, ValidatePodTemplateSpec(tmpl, tPath)...)
		}
	}
	if spec.Template.Spec.RestartPolicy != v1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tPath.Child("spec", "restartPolicy"), spec.Template.Spec.RestartPolicy, []string{string(v1.RestartPolicyAlways)}))
	}
	if spec.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in StatefulSet is not Supported"))
	}
	return errs
}

// templateToValidate is spec's template as its pods will have it: the
// controller sets hostname and subdomain, and adds a volume for each claim
// template (replacing a template volume of the same name).
func templateToValidate(spec *appsv1.StatefulSetSpec) *v1.PodTemplateSpec {
	t := &spec.Template
	if t.Spec.Subdomain == "" && t.Spec.Hostname == "" && len(spec.VolumeClaimTemplates) == 0 {
		return t
	}
	t = t.DeepCopy()
	t.Spec.Subdomain, t.Spec.Hostname = "", ""
	if len(spec.VolumeClaimTemplates) == 0 {
		return t
	}
	claims := map[string]bool{}
	var vols []v1.Volume
	for _, c := range spec.VolumeClaimTemplates {
		if claims[c.Name] {
			continue
		}
		claims[c.Name] = true
		vols = append(vols, v1.Volume{Name: c.Name, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
	}
	for _, v := range t.Spec.Volumes {
		if !claims[v.Name] {
			vols = append(vols, v)
		}
	}
	t.Spec.Volumes = vols
	return t
}

func validateRetentionPolicyType(p appsv1.PersistentVolumeClaimRetentionPolicyType, fldPath *field.Path) field.ErrorList {
	switch p {
	case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []string{string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType), string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)})}
}

func validateRollingUpdateStatefulSet(ru *appsv1.RollingUpdateStatefulSetStrategy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ru.Partition != nil {
		errs = append(errs, validateNonnegative(int64(*ru.Partition), fldPath.Child("partition"))...)
	}
	if mu := ru.MaxUnavailable; mu != nil {
		muPath := fldPath.Child("maxUnavailable")
		errs = append(errs, validatePositiveIntOrPercent(mu, muPath)...)
		if intOrPercentValue(mu) == 0 {
			errs = append(errs, field.Invalid(muPath, *mu, "cannot be 0"))
		}
		errs = append(errs, notMoreThan100Percent(mu, muPath)...)
	}
	return errs
}

// ValidateStatefulSetUpdate validates a stateful set update: the new spec
// (tolerating an old invalid serviceName, claim templates and, when the
// old spec does not validate, template), and only replicas, ordinals,
// template, updateStrategy, revisionHistoryLimit,
// persistentVolumeClaimRetentionPolicy and minReadySeconds may change.
func ValidateStatefulSetUpdate(newSS, oldSS *appsv1.StatefulSet) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newSS.ObjectMeta, &oldSS.ObjectMeta, metadataPath)
	opts := statefulSetOptions{allowInvalidServiceName: true, skipClaimTemplates: true}
	if len(validateStatefulSetSpec(&oldSS.Spec, nil, opts)) > 0 {
		opts.skipTemplate = true
	}
	errs = append(errs, validateStatefulSetSpec(&newSS.Spec, field.NewPath("spec"), opts)...)
	clone := newSS.Spec.DeepCopy()
	clone.Replicas = oldSS.Spec.Replicas
	clone.Template = oldSS.Spec.Template
	clone.UpdateStrategy = oldSS.Spec.UpdateStrategy
	clone.MinReadySeconds = oldSS.Spec.MinReadySeconds
	clone.Ordinals = oldSS.Spec.Ordinals
	clone.RevisionHistoryLimit = oldSS.Spec.RevisionHistoryLimit
	clone.PersistentVolumeClaimRetentionPolicy = oldSS.Spec.PersistentVolumeClaimRetentionPolicy
	if !apiequality.Semantic.DeepEqual(*clone, oldSS.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
	}
	return errs
}

// ValidateStatefulSetStatusUpdate validates a statefulsets/status update:
// counts non-negative and within status.replicas, availableReplicas within
// readyReplicas, collisionCount never decremented.
func ValidateStatefulSetStatusUpdate(newSS, oldSS *appsv1.StatefulSet) field.ErrorList {
	s, p := newSS.Status, field.NewPath("status")
	var errs field.ErrorList
	for _, c := range []struct {
		name string
		v    int32
	}{
		{"replicas", s.Replicas}, {"readyReplicas", s.ReadyReplicas}, {"currentReplicas", s.CurrentReplicas},
		{"updatedReplicas", s.UpdatedReplicas}, {"availableReplicas", s.AvailableReplicas},
	} {
		errs = append(errs, validateNonnegative(int64(c.v), p.Child(c.name))...)
	}
	errs = append(errs, validateNonnegative(s.ObservedGeneration, p.Child("observedGeneration"))...)
	if s.CollisionCount != nil {
		errs = append(errs, validateNonnegative(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	for _, c := range []struct {
		name string
		v    int32
	}{
		{"readyReplicas", s.ReadyReplicas}, {"currentReplicas", s.CurrentReplicas}, {"updatedReplicas", s.UpdatedReplicas}, {"availableReplicas", s.AvailableReplicas},
	} {
		if c.v > s.Replicas {
			errs = append(errs, field.Invalid(p.Child(c.name), c.v, greaterThanReplicas))
		}
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than status.readyReplicas"))
	}
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&newSS.ObjectMeta, &oldSS.ObjectMeta, metadataPath)...)
	if old := oldSS.Status.CollisionCount; old != nil && (s.CollisionCount == nil || *s.CollisionCount < *old) {
		value := int32(0)
		if s.CollisionCount != nil {
			value = *s.CollisionCount
		}
		errs = append(errs, field.Invalid(p.Child("collisionCount"), value, "cannot be decremented"))
	}
	return errs
}
