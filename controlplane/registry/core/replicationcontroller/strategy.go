// Package replicationcontroller is the registry strategy for core/v1
// replication controllers: status cleared on create and kept apart,
// metadata.generation bumped on spec changes, dependents orphaned by
// default on delete (core/v1's backward-compatible policy), the
// status.replicas field selector, and the table (NAME DESIRED CURRENT READY
// AGE, wide: CONTAINERS IMAGES SELECTOR).
package replicationcontroller

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the replicationcontrollers strategy.
type Strategy struct{ base.Strategy }

var _ rest.GarbageCollectionDeleteStrategy = Strategy{}

// NewStrategy returns the replicationcontrollers strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("v1", "status")
	return s
}

// DefaultGarbageCollectionPolicy orphans the pods of a replication
// controller deleted without a propagation policy, as upstream does for
// core/v1 (the only version replication controllers are served at).
func (Strategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.OrphanDependents
}

// PrepareForCreate clears the status and sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	rc := obj.(*v1.ReplicationController)
	rc.Status = v1.ReplicationControllerStatus{}
	rc.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation on spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*v1.ReplicationController), old.(*v1.ReplicationController)
	n.Status = o.Status
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) {
		n.Generation = o.Generation + 1
	}
}

// templateSpecPath is where the pod spec sits.
var templateSpecPath = field.NewPath("spec", "template", "spec")

// WarningsOnCreate warns about a name that is not a DNS label (it becomes
// the pods' name prefix and hostname) and returns the template's warnings.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	rc := obj.(*v1.ReplicationController)
	var warnings []string
	if msgs := utilvalidation.IsDNS1123Label(rc.Name); len(msgs) != 0 {
		warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	if rc.Spec.Template != nil {
		warnings = append(warnings, validation.WarningsForPodSpec(&rc.Spec.Template.Spec, templateSpecPath)...)
	}
	return warnings
}

// WarningsOnUpdate returns the template's warnings when the spec changed.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	n, o := obj.(*v1.ReplicationController), old.(*v1.ReplicationController)
	if n.Generation == o.Generation || n.Spec.Template == nil {
		return nil
	}
	return validation.WarningsForPodSpec(&n.Spec.Template.Spec, templateSpecPath)
}

// Validate validates a new replication controller.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateReplicationController(obj.(*v1.ReplicationController))
}

// ValidateUpdate validates a replication controller update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateReplicationControllerUpdate(obj.(*v1.ReplicationController), old.(*v1.ReplicationController))
}

// StatusStrategy is the replicationcontrollers/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the replicationcontrollers/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*v1.ReplicationController).Spec = old.(*v1.ReplicationController).Spec
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateReplicationControllerStatusUpdate(obj.(*v1.ReplicationController), old.(*v1.ReplicationController))
}

// GetAttrs returns a replication controller's labels and selectable fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set {
	return fieldsets.ReplicationController(o.(*v1.ReplicationController))
})

// Predicate matches replication controllers against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints replication controllers as kubectl get rc does.
var Table = base.Table[*v1.ReplicationController]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.IntCol("Desired", v1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
		base.IntCol("Current", v1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
		base.IntCol("Ready", v1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
		base.AgeColumn,
		base.Wide(base.Col("Containers", "Names of each container in the template.")),
		base.Wide(base.Col("Images", "Images referenced by each container in the template.")),
		base.Wide(base.Col("Selector", v1.ReplicationControllerSpec{}.SwaggerDoc()["selector"])),
	},
	Row: func(rc *v1.ReplicationController, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		desired := int32(0)
		if rc.Spec.Replicas != nil {
			desired = *rc.Spec.Replicas
		}
		var names, images string
		if rc.Spec.Template != nil {
			names, images = base.ContainerCells(rc.Spec.Template.Spec.Containers)
		}
		return []interface{}{rc.Name, int64(desired), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
			base.Age(rc.CreationTimestamp, now), names, images, labels.FormatLabels(rc.Spec.Selector)}, nil
	},
}
