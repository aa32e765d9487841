package convert

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHPARoundTrip(t *testing.T) {
	i32 := func(n int32) *int32 { return &n }
	q := resource.MustParse("200Mi")
	pol := autoscalingv2.MaxChangePolicySelect
	v2 := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: map[string]string{"keep": "me"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    i32(2), MaxReplicas: 9,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: i32(60)}}},
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: &pol,
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 30}}}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, DesiredReplicas: 4,
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededRescale"}}},
	}
	v1 := HPAToV1(v2)
	if v1.Spec.TargetCPUUtilizationPercentage == nil || *v1.Spec.TargetCPUUtilizationPercentage != 60 || v1.Annotations["keep"] != "me" ||
		v1.Annotations[MetricSpecsAnnotation] == "" || v1.Annotations[BehaviorSpecsAnnotation] == "" || v1.Annotations[ConditionsAnnotation] == "" {
		t.Fatalf("v1: %+v", v1)
	}
	back := HPAFromV1(v1)
	if !apiequality.Semantic.DeepEqual(back.Spec, v2.Spec) || !apiequality.Semantic.DeepEqual(back.Annotations, v2.Annotations) ||
		len(back.Status.Conditions) != 1 || back.Status.DesiredReplicas != 4 {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back.Spec, v2.Spec)
	}
	// A plain v1 HPA without a target gets upstream's 80% cpu default.
	plain := HPAFromV1(&autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3}})
	if len(plain.Spec.Metrics) != 1 || *plain.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Fatalf("default metric: %+v", plain.Spec.Metrics)
	}
}
