// Package controllerrevision is the registry strategy for apps/v1
// controller revisions (immutable data, revision ≥ 0) and their table (NAME
// CONTROLLER REVISION AGE).
package controllerrevision

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the controllerrevisions strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the controllerrevisions strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, true)} }

// PrepareForCreate leaves the revision as it is.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate leaves the revision as it is (validation refuses data changes).
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new controller revision.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateControllerRevision(obj.(*appsv1.ControllerRevision))
}

// ValidateUpdate validates a controller revision update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateControllerRevisionUpdate(obj.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision))
}

// GetAttrs returns a controller revision's labels and selectable fields (metadata only).
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches controller revisions against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints controller revisions as kubectl get controllerrevisions does:
// CONTROLLER is the controller's lower-case kind.group/name, "<none>" when
// it has none.
var Table = base.Table[*appsv1.ControllerRevision]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Controller", "Controller of the object"),
		base.Col("Revision", appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
		base.AgeColumn,
	},
	Row: func(r *appsv1.ControllerRevision, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		controller := "<none>"
		if ref := metav1.GetControllerOfNoCopy(r); ref != nil {
			controller = ref.Name
			if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
				if gk := gv.WithKind(ref.Kind).GroupKind(); !gk.Empty() {
					controller = strings.ToLower(gk.String()) + "/" + ref.Name
				}
			}
		}
		return []interface{}{r.Name, controller, r.Revision, base.Age(r.CreationTimestamp, now)}, nil
	},
}
