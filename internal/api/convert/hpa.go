package convert

import (
	"encoding/json"
	"maps"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// The annotations that carry what autoscaling/v1 has no field for, as
// upstream's conversion writes them.
const (
	MetricSpecsAnnotation    = "autoscaling.alpha.kubernetes.io/metrics"
	MetricStatusesAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	ConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	BehaviorSpecsAnnotation  = "autoscaling.alpha.kubernetes.io/behavior"
)

var roundTrip = []string{MetricSpecsAnnotation, MetricStatusesAnnotation, ConditionsAnnotation, BehaviorSpecsAnnotation}

// dropRoundTrip returns annotations without the conversion annotations.
func dropRoundTrip(in map[string]string) map[string]string {
	out := maps.Clone(in)
	for _, k := range roundTrip {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func isCPUUtilization(m *autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

// HPAToV1 converts a stored autoscaling/v2 HPA to autoscaling/v1 as upstream:
// the cpu utilization target and current value in their v1 fields; other
// resource, container resource and pods metrics, the behavior and the
// conditions in annotations. (Object and External metrics have no v1 form
// here and are left out.)
func HPAToV1(in *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv1.HorizontalPodAutoscaler {
	out := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration, LastScaleTime: in.Status.LastScaleTime,
			CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas,
		},
	}
	out.Annotations = dropRoundTrip(out.Annotations)
	annotate := func(key string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[key] = string(b)
	}
	var other []autoscalingv1.MetricSpec
	for i := range in.Spec.Metrics {
		m := &in.Spec.Metrics[i]
		if isCPUUtilization(m) {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				v := *m.Resource.Target.AverageUtilization
				out.Spec.TargetCPUUtilizationPercentage = &v
			}
			continue
		}
		if c, ok := metricSpecToV1(m); ok {
			other = append(other, c)
		}
	}
	if len(other) > 0 {
		annotate(MetricSpecsAnnotation, other)
	}
	var current []autoscalingv1.MetricStatus
	for _, m := range in.Status.CurrentMetrics {
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource == nil {
			continue
		}
		if m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			v := *m.Resource.Current.AverageUtilization
			out.Status.CurrentCPUUtilizationPercentage = &v
		}
		st := autoscalingv1.MetricStatus{Type: autoscalingv1.ResourceMetricSourceType, Resource: &autoscalingv1.ResourceMetricStatus{
			Name: m.Resource.Name, CurrentAverageUtilization: m.Resource.Current.AverageUtilization}}
		if m.Resource.Current.AverageValue != nil {
			st.Resource.CurrentAverageValue = *m.Resource.Current.AverageValue
		}
		current = append(current, st)
	}
	if len(current) > 0 {
		annotate(MetricStatusesAnnotation, current)
	}
	if in.Spec.Behavior != nil {
		annotate(BehaviorSpecsAnnotation, in.Spec.Behavior)
	}
	if len(in.Status.Conditions) > 0 {
		conds := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(in.Status.Conditions))
		for i, c := range in.Status.Conditions {
			conds[i] = autoscalingv1.HorizontalPodAutoscalerCondition{Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type),
				Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
		}
		annotate(ConditionsAnnotation, conds)
	}
	return out
}

func metricSpecToV1(m *autoscalingv2.MetricSpec) (autoscalingv1.MetricSpec, bool) {
	switch {
	case m.Resource != nil:
		return autoscalingv1.MetricSpec{Type: autoscalingv1.ResourceMetricSourceType, Resource: &autoscalingv1.ResourceMetricSource{
			Name: m.Resource.Name, TargetAverageUtilization: m.Resource.Target.AverageUtilization, TargetAverageValue: m.Resource.Target.AverageValue}}, true
	case m.ContainerResource != nil:
		return autoscalingv1.MetricSpec{Type: autoscalingv1.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv1.ContainerResourceMetricSource{
			Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
			TargetAverageUtilization: m.ContainerResource.Target.AverageUtilization, TargetAverageValue: m.ContainerResource.Target.AverageValue}}, true
	case m.Pods != nil && m.Pods.Target.AverageValue != nil:
		return autoscalingv1.MetricSpec{Type: autoscalingv1.PodsMetricSourceType, Pods: &autoscalingv1.PodsMetricSource{
			MetricName: m.Pods.Metric.Name, Selector: m.Pods.Metric.Selector, TargetAverageValue: *m.Pods.Target.AverageValue}}, true
	}
	return autoscalingv1.MetricSpec{}, false
}

func metricSpecFromV1(m *autoscalingv1.MetricSpec) (autoscalingv2.MetricSpec, bool) {
	target := func(u *int32) autoscalingv2.MetricTarget {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: u}
		if u == nil {
			t.Type = autoscalingv2.AverageValueMetricType
		}
		return t
	}
	switch {
	case m.Resource != nil:
		t := target(m.Resource.TargetAverageUtilization)
		t.AverageValue = m.Resource.TargetAverageValue
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: m.Resource.Name, Target: t}}, true
	case m.ContainerResource != nil:
		t := target(m.ContainerResource.TargetAverageUtilization)
		t.AverageValue = m.ContainerResource.TargetAverageValue
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
			Name: m.ContainerResource.Name, Container: m.ContainerResource.Container, Target: t}}, true
	case m.Pods != nil:
		v := m.Pods.TargetAverageValue
		return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: m.Pods.MetricName, Selector: m.Pods.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v}}}, true
	}
	return autoscalingv2.MetricSpec{}, false
}

// HPAFromV1 converts an autoscaling/v1 HPA to the stored autoscaling/v2 form
// as upstream: the annotated metrics first, then the cpu utilization
// target (80% when neither is given); the annotated behavior and current
// metrics and conditions; the conversion annotations dropped.
func HPAFromV1(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration, LastScaleTime: in.Status.LastScaleTime,
			CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas,
		},
	}
	ann := in.Annotations
	var other []autoscalingv1.MetricSpec
	if enc, ok := ann[MetricSpecsAnnotation]; ok && json.Unmarshal([]byte(enc), &other) == nil {
		for i := range other {
			if m, ok := metricSpecFromV1(&other[i]); ok {
				out.Spec.Metrics = append(out.Spec.Metrics, m)
			}
		}
	}
	cpu := in.Spec.TargetCPUUtilizationPercentage
	if cpu == nil && len(out.Spec.Metrics) == 0 {
		v := int32(80)
		cpu = &v
	}
	if cpu != nil {
		v := *cpu
		out.Spec.Metrics = append(out.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &v}}})
	}
	if enc, ok := ann[BehaviorSpecsAnnotation]; ok {
		var b autoscalingv2.HorizontalPodAutoscalerBehavior
		if json.Unmarshal([]byte(enc), &b) == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = &b
		}
	}
	var current []autoscalingv1.MetricStatus
	if enc, ok := ann[MetricStatusesAnnotation]; ok && json.Unmarshal([]byte(enc), &current) == nil {
		for _, m := range current {
			if m.Resource == nil {
				continue
			}
			v := m.Resource.CurrentAverageValue
			out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricStatus{Name: m.Resource.Name, Current: autoscalingv2.MetricValueStatus{
					AverageUtilization: m.Resource.CurrentAverageUtilization, AverageValue: &v}}})
		}
	} else if u := in.Status.CurrentCPUUtilizationPercentage; u != nil {
		v := *u
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &v}}}}
	}
	var conds []autoscalingv1.HorizontalPodAutoscalerCondition
	if enc, ok := ann[ConditionsAnnotation]; ok && json.Unmarshal([]byte(enc), &conds) == nil {
		for _, c := range conds {
			out.Status.Conditions = append(out.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
				Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
		}
	}
	out.Annotations = dropRoundTrip(out.Annotations)
	return out
}
