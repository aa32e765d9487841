// Package flowschema is the registry strategy for
// flowcontrol.apiserver.k8s.io/v1 FlowSchemas (spec, and a /status the
// priority-and-fairness configuration controller writes) and their table
// (NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE MISSINGPL).
package flowschema

import (
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

type flowSchema = flowcontrolv1.FlowSchema

var kind = base.SpecStatusKind[*flowSchema]{
	APIVersion:           "flowcontrol.apiserver.k8s.io/v1",
	Spec:                 func(f *flowSchema) any { return f.Spec },
	SetSpec:              func(to, from *flowSchema) { to.Spec = from.Spec },
	ClearStatus:          func(f *flowSchema) { f.Status = flowcontrolv1.FlowSchemaStatus{} },
	SetStatus:            func(to, from *flowSchema) { to.Status = from.Status },
	Validate:             validation.ValidateFlowSchema,
	ValidateUpdate:       validation.ValidateFlowSchemaUpdate,
	ValidateStatusUpdate: validation.ValidateFlowSchemaStatusUpdate,
}

// NewStrategy returns the flowschemas strategy.
func NewStrategy(typer runtime.ObjectTyper) base.SpecStatusStrategy[*flowSchema] {
	return base.NewSpecStatus(typer, kind)
}

// NewStatusStrategy returns the flowschemas/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) base.SpecStatusStatusStrategy[*flowSchema] {
	return base.NewSpecStatusStatus(typer, kind)
}

// GetAttrs returns a FlowSchema's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches FlowSchemas against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints flow schemas as kube-apiserver does.
var Table = base.Table[*flowSchema]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("PriorityLevel", flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]),
		base.Col("MatchingPrecedence", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]),
		base.Col("DistinguisherMethod", flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]),
		base.AgeColumn,
		base.Col("MissingPL", "references a broken or non-existent PriorityLevelConfiguration"),
	},
	Row: func(f *flowSchema, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		method := "<none>"
		if d := f.Spec.DistinguisherMethod; d != nil {
			method = string(d.Type)
		}
		missing := "?"
		for _, c := range f.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				missing = string(c.Status)
				break
			}
		}
		return []interface{}{f.Name, f.Spec.PriorityLevelConfiguration.Name, int64(f.Spec.MatchingPrecedence), method,
			base.Age(f.CreationTimestamp, now), missing}, nil
	},
}
