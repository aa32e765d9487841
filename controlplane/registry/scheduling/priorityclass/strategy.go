// Package priorityclass describes scheduling.k8s.io/v1 PriorityClasses
// to the registry (cluster-scoped; value and preemptionPolicy immutable;
// "system-" names reserved) and their table (NAME VALUE GLOBAL-DEFAULT AGE
// PREEMPTIONPOLICY).
package priorityclass

import (
	"context"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes priorityclasses.
var Kind = base.Kind[*schedulingv1.PriorityClass]{
	// generation 1 on create (and never bumped), as upstream
	PrepareCreate:  func(_ context.Context, pc *schedulingv1.PriorityClass) { pc.Generation = 1 },
	Validate:       validation.ValidatePriorityClass,
	ValidateUpdate: validation.ValidatePriorityClassUpdate,
	Table:          table,
}

// table prints NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY (every
// column filled, as kube-apiserver prints it).
var table = base.Table[*schedulingv1.PriorityClass]{
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
