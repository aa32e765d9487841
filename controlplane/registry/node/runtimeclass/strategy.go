// Package runtimeclass is the registry strategy for node.k8s.io/v1
// RuntimeClasses (cluster-scoped; the handler is immutable; a PUT may
// create one, as upstream) and their table (NAME HANDLER AGE).
package runtimeclass

import (
	"context"
	"time"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the runtimeclasses strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the runtimeclasses strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, false)}
	s.CreateOnUpdate = true
	return s
}

// PrepareForCreate does nothing: a RuntimeClass has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a RuntimeClass has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// AllowUnconditionalUpdate is false, as upstream: an update names the
// resourceVersion it replaces.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// Validate validates a new RuntimeClass.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateRuntimeClass(obj.(*nodev1.RuntimeClass))
}

// ValidateUpdate validates a RuntimeClass update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateRuntimeClassUpdate(obj.(*nodev1.RuntimeClass), old.(*nodev1.RuntimeClass))
}

// WarningsOnCreate warns about deprecated node labels in the scheduling.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return validation.WarningsForRuntimeClass(obj.(*nodev1.RuntimeClass))
}

// WarningsOnUpdate warns about deprecated node labels in the scheduling.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return validation.WarningsForRuntimeClass(obj.(*nodev1.RuntimeClass))
}

// GetAttrs returns a RuntimeClass's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches RuntimeClasses against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME HANDLER AGE.
var Table = base.Table[*nodev1.RuntimeClass]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.Col("Handler", nodev1.RuntimeClass{}.SwaggerDoc()["handler"]), base.AgeColumn},
	Row: func(rc *nodev1.RuntimeClass, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{rc.Name, rc.Handler, base.Age(rc.CreationTimestamp, now)}, nil
	},
}
