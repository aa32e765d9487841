// Package replicaset is the registry strategy for apps/v1 replica sets:
// status cleared on create and kept apart, metadata.generation bumped on
// spec changes, an immutable selector, the status.replicas field selector,
// and the table (NAME DESIRED CURRENT READY AGE, wide: CONTAINERS IMAGES
// SELECTOR).
package replicaset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the replicasets strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the replicasets strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("apps/v1", "status")
	return s
}

// PrepareForCreate clears the status and sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	rs := obj.(*appsv1.ReplicaSet)
	rs.Status = appsv1.ReplicaSetStatus{}
	rs.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation on spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
	n.Status = o.Status
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) {
		n.Generation = o.Generation + 1
	}
}

// WarningsOnCreate returns the pod template's warnings.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	d := obj.(*appsv1.ReplicaSet)
	return validation.WarningsForPodSpec(&d.Spec.Template.Spec, templateSpecPath)
}

// WarningsOnUpdate returns the pod template's warnings when the template changed.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	d, o := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
	if apiequality.Semantic.DeepEqual(d.Spec.Template, o.Spec.Template) {
		return nil
	}
	return validation.WarningsForPodSpec(&d.Spec.Template.Spec, templateSpecPath)
}

// templateSpecPath is where a workload's pod spec sits.
var templateSpecPath = field.NewPath("spec", "template", "spec")

// Validate validates a new replica set.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateReplicaSet(obj.(*appsv1.ReplicaSet))
}

// ValidateUpdate validates a replica set update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateReplicaSetUpdate(obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet))
}

// StatusStrategy is the replicasets/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the replicasets/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("apps/v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*appsv1.ReplicaSet).Spec = old.(*appsv1.ReplicaSet).Spec
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateReplicaSetStatusUpdate(obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet))
}

// GetAttrs returns a replica set's labels and selectable fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.ReplicaSet(o.(*appsv1.ReplicaSet)) })

// Predicate matches replica sets against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints replica sets as kubectl get replicasets does.
var Table = base.Table[*appsv1.ReplicaSet]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.IntCol("Desired", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		base.IntCol("Current", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		base.IntCol("Ready", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		base.AgeColumn,
		base.Wide(base.Col("Containers", "Names of each container in the template.")),
		base.Wide(base.Col("Images", "Images referenced by each container in the template.")),
		base.Wide(base.Col("Selector", appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"])),
	},
	Row: func(rs *appsv1.ReplicaSet, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		desired := int32(0)
		if rs.Spec.Replicas != nil {
			desired = *rs.Spec.Replicas
		}
		names, images := base.ContainerCells(rs.Spec.Template.Spec.Containers)
		return []interface{}{rs.Name, int64(desired), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			base.Age(rs.CreationTimestamp, now), names, images, base.Selector(rs.Spec.Selector)}, nil
	},
}
