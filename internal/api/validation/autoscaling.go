package validation

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's bounds on HPA behavior.
const (
	maxPeriodSeconds              int32 = 1800
	maxStabilizationWindowSeconds int32 = 3600
)

// ValidateHorizontalPodAutoscaler validates an autoscaling/v2 HPA as
// upstream (HPAScaleToZero off: minReplicas ≥ 1): metadata, replicas
// bounds, scaleTargetRef, metrics and behavior.
func ValidateHorizontalPodAutoscaler(hpa *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&hpa.ObjectMeta, true, DNSSubdomainName, metadataPath)
	return append(errs, validateHPASpec(&hpa.Spec, field.NewPath("spec"))...)
}

// ValidateHorizontalPodAutoscalerUpdate validates an HPA update.
func ValidateHorizontalPodAutoscalerUpdate(n, o *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&n.ObjectMeta, &o.ObjectMeta, metadataPath)
	return append(errs, validateHPASpec(&n.Spec, field.NewPath("spec"))...)
}

// ValidateHorizontalPodAutoscalerStatusUpdate validates an HPA status
// update: the replica counts are non-negative.
func ValidateHorizontalPodAutoscalerStatusUpdate(n, o *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&n.ObjectMeta, &o.ObjectMeta, metadataPath)
	p := field.NewPath("status")
	errs = append(errs, validateNonnegative(int64(n.Status.CurrentReplicas), p.Child("currentReplicas"))...)
	return append(errs, validateNonnegative(int64(n.Status.DesiredReplicas), p.Child("desiredReplicas"))...)
}

func validateHPASpec(spec *autoscalingv2.HorizontalPodAutoscalerSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinReplicas != nil && *spec.MinReplicas < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("minReplicas"), *spec.MinReplicas, "must be greater than or equal to 1"))
	}
	if spec.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		errs = append(errs, field.Invalid(fldPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	ref, refPath := spec.ScaleTargetRef, fldPath.Child("scaleTargetRef")
	errs = append(errs, validatePathSegment(ref.Kind, refPath.Child("kind"))...)
	errs = append(errs, validatePathSegment(ref.Name, refPath.Child("name"))...)
	if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		errs = append(errs, field.Invalid(refPath.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	for i := range spec.Metrics {
		errs = append(errs, validateMetricSpec(&spec.Metrics[i], fldPath.Child("metrics").Index(i))...)
	}
	if b := spec.Behavior; b != nil {
		errs = append(errs, validateScalingRules(b.ScaleUp, fldPath.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateScalingRules(b.ScaleDown, fldPath.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func validatePathSegment(v string, fldPath *field.Path) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	for _, msg := range path.IsValidPathSegmentName(v) {
		errs = append(errs, field.Invalid(fldPath, v, msg))
	}
	return errs
}

var metricSourceTypes = []string{string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
	string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType), string(autoscalingv2.ResourceMetricSourceType)}

// validateMetricSpec checks the metric's type and that exactly the
// matching source is set; resource sources get upstream's target rules.
func validateMetricSpec(m *autoscalingv2.MetricSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		errs = append(errs, field.Required(fldPath.Child("type"), "must specify a metric source type"))
	}
	set := map[autoscalingv2.MetricSourceType]bool{
		autoscalingv2.ObjectMetricSourceType: m.Object != nil, autoscalingv2.ExternalMetricSourceType: m.External != nil,
		autoscalingv2.PodsMetricSourceType: m.Pods != nil, autoscalingv2.ResourceMetricSourceType: m.Resource != nil,
		autoscalingv2.ContainerResourceMetricSourceType: m.ContainerResource != nil,
	}
	known, n := false, 0
	for t, present := range set {
		known = known || t == m.Type
		if present {
			n++
		}
	}
	if !known {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), m.Type, metricSourceTypes))
	}
	if n > 1 {
		errs = append(errs, field.Forbidden(fldPath, "must populate the given metric source only"))
	}
	if known && !set[m.Type] {
		errs = append(errs, field.Required(fldPath, "must populate information for the given metric source"))
	}
	switch {
	case m.Resource != nil:
		errs = append(errs, validateResourceTarget(string(m.Resource.Name), &m.Resource.Target, fldPath.Child("resource"))...)
	case m.ContainerResource != nil:
		p := fldPath.Child("containerResource")
		if m.ContainerResource.Container == "" {
			errs = append(errs, field.Required(p.Child("container"), "must specify a container"))
		}
		errs = append(errs, validateResourceTarget(string(m.ContainerResource.Name), &m.ContainerResource.Target, p)...)
	}
	return errs
}

func validateResourceTarget(name string, t *autoscalingv2.MetricTarget, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), "must specify a resource name"))
	}
	tp := fldPath.Child("target")
	if t.Type == "" {
		errs = append(errs, field.Required(tp.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(tp.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(tp.Child("value"), t.Value, "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(tp.Child("averageValue"), t.AverageValue, "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(tp.Child("averageUtilization"), t.AverageUtilization, "must be greater than 0"))
	}
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(tp.Child("averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Forbidden(tp.Child("averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateScalingRules(r *autoscalingv2.HPAScalingRules, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil && *w < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), r.StabilizationWindowSeconds, "must be greater than or equal to zero"))
	}
	if w := r.StabilizationWindowSeconds; w != nil && *w > maxStabilizationWindowSeconds {
		errs = append(errs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), r.StabilizationWindowSeconds, fmt.Sprintf("must be less than or equal to %v", maxStabilizationWindowSeconds)))
	}
	if p := r.SelectPolicy; p != nil && *p != autoscalingv2.MaxChangePolicySelect && *p != autoscalingv2.MinChangePolicySelect && *p != autoscalingv2.DisabledPolicySelect {
		errs = append(errs, field.NotSupported(fldPath.Child("selectPolicy"), r.SelectPolicy, []string{"Disabled", "Max", "Min"}))
	}
	pp := fldPath.Child("policies")
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(pp, "must specify at least one Policy"))
	}
	for i, p := range r.Policies {
		ip := pp.Index(i)
		if p.Type != autoscalingv2.PodsScalingPolicy && p.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(ip.Child("type"), p.Type, []string{"Percent", "Pods"}))
		}
		if p.Value <= 0 {
			errs = append(errs, field.Invalid(ip.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		}
		if p.PeriodSeconds > maxPeriodSeconds {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), p.PeriodSeconds, fmt.Sprintf("must be less than or equal to %v", maxPeriodSeconds)))
		}
	}
	return errs
}
