// Package flowschema describes flowcontrol.apiserver.k8s.io/v1
// FlowSchemas to the registry (spec, and a /status the
// priority-and-fairness configuration controller writes) and their table
// (NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE MISSINGPL).
package flowschema

import (
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type flowSchema = flowcontrolv1.FlowSchema

// Kind describes flowschemas: the priority-and-fairness configuration
// controller writes the status.
var Kind = base.Kind[*flowSchema]{
	APIVersion:           "flowcontrol.apiserver.k8s.io/v1",
	Status:               true,
	SpecGeneration:       true,
	StatusKeepsMeta:      true,
	StatusResets:         []string{"metadata", "spec"},
	Validate:             validation.ValidateFlowSchema,
	ValidateUpdate:       validation.ValidateFlowSchemaUpdate,
	ValidateStatusUpdate: validation.ValidateFlowSchemaStatusUpdate,
	Table:                table,
}

// table prints flow schemas as kube-apiserver does.
var table = base.Table[*flowSchema]{
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
