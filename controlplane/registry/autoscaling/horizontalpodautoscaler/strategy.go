// Package horizontalpodautoscaler is the registry strategy for
// autoscaling/v2 horizontal pod autoscalers (the stored version): status
// cleared on create and kept apart, generation bumped on spec changes,
// upstream's validation, and the table (NAME REFERENCE TARGETS MINPODS
// MAXPODS REPLICAS AGE). autoscaling/v1 is served as a view of the same
// objects (internal/api/convert).
package horizontalpodautoscaler

import (
	"context"
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the horizontalpodautoscalers strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the horizontalpodautoscalers strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("autoscaling/v2", "status")
	return s
}

// PrepareForCreate clears the status and sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
	h.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation on spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler)
	n.Status = o.Status
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) {
		n.Generation = o.Generation + 1
	}
}

// Validate validates a new HPA.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateHorizontalPodAutoscaler(obj.(*autoscalingv2.HorizontalPodAutoscaler))
}

// ValidateUpdate validates an HPA update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateHorizontalPodAutoscalerUpdate(obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler))
}

// StatusStrategy is the horizontalpodautoscalers/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the horizontalpodautoscalers/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("autoscaling/v2", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*autoscalingv2.HorizontalPodAutoscaler).Spec = old.(*autoscalingv2.HorizontalPodAutoscaler).Spec
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateHorizontalPodAutoscalerStatusUpdate(obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler))
}

// GetAttrs returns an HPA's labels and selectable fields (metadata only).
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches HPAs against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints HPAs as kubectl get hpa does.
var Table = base.Table[*autoscalingv2.HorizontalPodAutoscaler]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Reference", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]),
		base.Col("Targets", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]),
		base.Col("MinPods", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]),
		base.IntCol("MaxPods", autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]),
		base.IntCol("Replicas", autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]),
		base.AgeColumn,
	},
	Row: func(h *autoscalingv2.HorizontalPodAutoscaler, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
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
func targets(h *autoscalingv2.HorizontalPodAutoscaler) string {
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
