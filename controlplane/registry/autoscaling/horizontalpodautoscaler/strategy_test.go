package horizontalpodautoscaler

import (
	"context"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
)

func validHPA() *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MaxReplicas: 5,
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{},
		},
	}
	defaults.HorizontalPodAutoscaler(h)
	return h
}

func TestDefaults(t *testing.T) {
	h := validHPA()
	m := h.Spec.Metrics
	if *h.Spec.MinReplicas != 1 || len(m) != 1 || m[0].Resource.Name != corev1.ResourceCPU || *m[0].Resource.Target.AverageUtilization != 80 {
		t.Fatalf("defaults: %+v", h.Spec)
	}
	up, down := h.Spec.Behavior.ScaleUp, h.Spec.Behavior.ScaleDown
	if *up.StabilizationWindowSeconds != 0 || *up.SelectPolicy != autoscalingv2.MaxChangePolicySelect || len(up.Policies) != 2 ||
		down.StabilizationWindowSeconds != nil || len(down.Policies) != 1 || down.Policies[0].Value != 100 {
		t.Fatalf("behavior defaults: up %+v down %+v", up, down)
	}
}

func TestValidate(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	for _, tc := range []struct {
		name   string
		mutate func(*autoscalingv2.HorizontalPodAutoscaler)
		want   string
	}{
		{"valid", func(*autoscalingv2.HorizontalPodAutoscaler) {}, ""},
		{"min 0", func(h *autoscalingv2.HorizontalPodAutoscaler) { z := int32(0); h.Spec.MinReplicas = &z }, "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"},
		{"max below min", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 0 }, "spec.maxReplicas: Invalid value: 0: must be greater than 0"},
		{"no kind", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Kind = "" }, "spec.scaleTargetRef.kind: Required value"},
		{"utilization 0", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			z := int32(0)
			h.Spec.Metrics[0].Resource.Target.AverageUtilization = &z
		},
			"spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"},
		{"policy period", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior.ScaleUp.Policies[0].PeriodSeconds = 1801
		},
			"spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800"},
		{"select policy", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			p := autoscalingv2.ScalingPolicySelect("Most")
			h.Spec.Behavior.ScaleDown.SelectPolicy = &p
		},
			`spec.behavior.scaleDown.selectPolicy: Unsupported value: "Most"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := validHPA()
			tc.mutate(h)
			errs := s.Validate(context.Background(), h)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestTable(t *testing.T) {
	h := validHPA()
	u := int32(130)
	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &u}}}}}
	out, err := Kind.Table.ConvertToTable(context.Background(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []interface{}{"web", "Deployment/web", "cpu: 130%/80%", "1", int64(5), int64(3)}
	for i, w := range want {
		if out.Rows[0].Cells[i] != w {
			t.Errorf("cell %d (%s) = %v, want %v", i, out.ColumnDefinitions[i].Name, out.Rows[0].Cells[i], w)
		}
	}
}
