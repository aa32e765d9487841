// Package controllerrevision describes apps/v1 controller revisions to
// the registry (immutable data, revision ≥ 0) and their table (NAME
// CONTROLLER REVISION AGE).
package controllerrevision

import (
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes controllerrevisions.
var Kind = base.Kind[*appsv1.ControllerRevision]{
	Namespaced:     true,
	Validate:       validation.ValidateControllerRevision,
	ValidateUpdate: validation.ValidateControllerRevisionUpdate, // data is immutable
	Table:          table,
}

// table prints controller revisions as kubectl get controllerrevisions does:
// CONTROLLER is the controller's lower-case kind.group/name, "<none>" when
// it has none.
var table = base.Table[*appsv1.ControllerRevision]{
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
