// Package statefulset is the registry strategy for apps/v1 stateful sets:
// status cleared on create and kept apart, metadata.generation bumped on
// spec changes, rollingUpdate.maxUnavailable dropped unless already in use
// (upstream's MaxUnavailableStatefulSet gate is off by default), upstream's
// validation (only replicas, ordinals, template, updateStrategy,
// revisionHistoryLimit, persistentVolumeClaimRetentionPolicy and
// minReadySeconds may change), and the table (NAME READY AGE, wide:
// CONTAINERS IMAGES).
package statefulset

import (
	"context"
	"fmt"
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

// Strategy is the statefulsets strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the statefulsets strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("apps/v1", "status")
	return s
}

// PrepareForCreate clears the status and sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ss := obj.(*appsv1.StatefulSet)
	ss.Status = appsv1.StatefulSetStatus{}
	ss.Generation = 1
	dropMaxUnavailable(ss, nil)
}

// PrepareForUpdate keeps the status and bumps the generation on spec
// changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
	n.Status = o.Status
	dropMaxUnavailable(n, o)
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) {
		n.Generation = o.Generation + 1
	}
}

// dropMaxUnavailable clears rollingUpdate.maxUnavailable unless old used
// it: the field is behind upstream's alpha MaxUnavailableStatefulSet gate.
func dropMaxUnavailable(n, o *appsv1.StatefulSet) {
	if o != nil && o.Spec.UpdateStrategy.RollingUpdate != nil && o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable != nil {
		return
	}
	if ru := n.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		ru.MaxUnavailable = nil
	}
}

var templatePath = field.NewPath("spec", "template")

// warnings are the pod template's and the negative revisionHistoryLimit's.
func warnings(ss *appsv1.StatefulSet, withTemplate bool) []string {
	var w []string
	if withTemplate {
		w = validation.WarningsForPodSpec(&ss.Spec.Template.Spec, templatePath.Child("spec"))
	}
	if l := ss.Spec.RevisionHistoryLimit; l != nil && *l < 0 {
		w = append(w, "spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended")
	}
	return w
}

// WarningsOnCreate returns the pod template's warnings.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return warnings(obj.(*appsv1.StatefulSet), true)
}

// WarningsOnUpdate returns the pod template's warnings when the spec changed.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	n, o := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
	return warnings(n, n.Generation != o.Generation)
}

// Validate validates a new stateful set.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateStatefulSet(obj.(*appsv1.StatefulSet))
}

// ValidateUpdate validates a stateful set update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateStatefulSetUpdate(obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet))
}

// StatusStrategy is the statefulsets/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the statefulsets/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("apps/v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*appsv1.StatefulSet).Spec = old.(*appsv1.StatefulSet).Spec
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateStatefulSetStatusUpdate(obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet))
}

// WarningsOnUpdate returns none.
func (StatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetAttrs returns a stateful set's labels and selectable fields (metadata only).
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches stateful sets against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints stateful sets as kubectl get statefulsets does.
var Table = base.Table[*appsv1.StatefulSet]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Ready", "Number of the pod with ready state"),
		base.AgeColumn,
		base.Wide(base.Col("Containers", "Names of each container in the template.")),
		base.Wide(base.Col("Images", "Images referenced by each container in the template.")),
	},
	Row: func(ss *appsv1.StatefulSet, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		desired := int32(0)
		if ss.Spec.Replicas != nil {
			desired = *ss.Spec.Replicas
		}
		names, images := base.ContainerCells(ss.Spec.Template.Spec.Containers)
		return []interface{}{ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, desired), base.Age(ss.CreationTimestamp, now), names, images}, nil
	},
}
