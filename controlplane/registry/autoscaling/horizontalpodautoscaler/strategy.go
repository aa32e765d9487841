// Package horizontalpodautoscaler describes autoscaling/v2 horizontal pod
// autoscalers (the stored version) to the registry: status
// cleared on create and kept apart, generation bumped on spec changes,
// upstream's validation, and the table (NAME REFERENCE TARGETS MINPODS
// MAXPODS REPLICAS AGE). autoscaling/v1 is served as a view of the same
// objects (internal/api/convert).
package horizontalpodautoscaler

import (
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type hpa = autoscalingv2.HorizontalPodAutoscaler

// Kind describes horizontalpodautoscalers.
var Kind = base.Kind[*hpa]{
	APIVersion: "autoscaling/v2", Namespaced: true,
	Status:               true,
	SpecGeneration:       true,
	Validate:             validation.ValidateHorizontalPodAutoscaler,
	ValidateUpdate:       validation.ValidateHorizontalPodAutoscalerUpdate,
	ValidateStatusUpdate: validation.ValidateHorizontalPodAutoscalerStatusUpdate,
	Table:                table,
}

// table prints HPAs as kubectl get hpa does.
var table = base.Table[*hpa]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Reference", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]),
		base.Col("Targets", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]),
		base.Col("MinPods", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]),
		base.IntCol("MaxPods", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]),
		base.IntCol("Replicas", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
		base.AgeColumn,
	},
	Row: func(h *hpa, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		ref := h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name
		minPods := "<unset>"
		if h.Spec.MinReplicas != nil {
			minPods = fmt.Sprint(*h.Spec.MinReplicas)
		}
		return []interface{}{h.Name, ref, targets(h), minPods, int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), base.Age(h.CreationTimestamp, now)}, nil
	},
}

// targets formats each metric as upstream's printer: "<current>/<target>"
// ("<unknown>" without a current value), resource metrics prefixed by the
// resource name; more than four are elided.
func targets(h *hpa) string {
	if len(h.Spec.Metrics) == 0 {
		return "<none>"
	}
	var list []string
	for i, m := range h.Spec.Metrics {
		if i == 4 {
			list = append(list, fmt.Sprintf(" + %d more...", len(h.Spec.Metrics)-4))
			break
		}
		current := "<unknown>"
		switch {
		case m.Resource != nil:
			var cur *autoscalingv2.MetricStatus
			for j := range h.Status.CurrentMetrics {
				if c := &h.Status.CurrentMetrics[j]; c.Resource != nil && c.Resource.Name == m.Resource.Name {
					cur = c
				}
			}
			if m.Resource.Target.AverageValue != nil {
				if cur != nil && cur.Resource.Current.AverageValue != nil {
					current = cur.Resource.Current.AverageValue.String()
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", m.Resource.Name, current, m.Resource.Target.AverageValue.String()))
				continue
			}
			if cur != nil && cur.Resource.Current.AverageUtilization != nil {
				current = fmt.Sprintf("%d%%", *cur.Resource.Current.AverageUtilization)
			}
			target := "<auto>"
			if m.Resource.Target.AverageUtilization != nil {
				target = fmt.Sprintf("%d%%", *m.Resource.Target.AverageUtilization)
			}
			list = append(list, fmt.Sprintf("%s: %s/%s", m.Resource.Name, current, target))
		default:
			list = append(list, fmt.Sprintf("%s/<metric>", current))
		}
	}
	return strings.Join(list, ", ")
}
