// Package priorityclass is the registry strategy for scheduling.k8s.io/v1
// PriorityClasses (cluster-scoped; value and preemptionPolicy immutable;
// "system-" names reserved) and their table (NAME VALUE GLOBAL-DEFAULT AGE
// PREEMPTIONPOLICY).
package priorityclass

import (
	"context"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the priorityclasses strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the priorityclasses strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{base.New(typer, false)}
}

// PrepareForCreate sets generation 1, as upstream.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*schedulingv1.PriorityClass).Generation = 1
}

// PrepareForUpdate does nothing: a PriorityClass has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new PriorityClass.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidatePriorityClass(obj.(*schedulingv1.PriorityClass))
}

// ValidateUpdate validates a PriorityClass update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePriorityClassUpdate(obj.(*schedulingv1.PriorityClass), old.(*schedulingv1.PriorityClass))
}

// GetAttrs returns a PriorityClass's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches PriorityClasses against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY (every
// column filled, as kube-apiserver prints it).
var Table = base.Table[*schedulingv1.PriorityClass]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.IntCol("Value", schedulingv1.PriorityClass{}.SwaggerDoc()["value"]),
		{Name: "Global-Default", Type: "boolean", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]},
		base.AgeColumn,
		base.Col("PreemptionPolicy", schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]),
	},
	Row: func(pc *schedulingv1.PriorityClass, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		policy := ""
		if pc.PreemptionPolicy != nil {
			policy = string(*pc.PreemptionPolicy)
		}
		return []interface{}{pc.Name, int64(pc.Value), pc.GlobalDefault, base.Age(pc.CreationTimestamp, now), policy}, nil
	},
}
