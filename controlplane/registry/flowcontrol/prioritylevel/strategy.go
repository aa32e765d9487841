// Package prioritylevel is the registry strategy for
// flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfigurations (spec and
// /status) and their table (NAME TYPE NOMINALCONCURRENCYSHARES QUEUES
// HANDSIZE QUEUELENGTHLIMIT AGE).
package prioritylevel

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

type level = flowcontrolv1.PriorityLevelConfiguration

var kind = base.SpecStatusKind[*level]{
	APIVersion:           "flowcontrol.apiserver.k8s.io/v1",
	Spec:                 func(l *level) any { return l.Spec },
	SetSpec:              func(to, from *level) { to.Spec = from.Spec },
	ClearStatus:          func(l *level) { l.Status = flowcontrolv1.PriorityLevelConfigurationStatus{} },
	SetStatus:            func(to, from *level) { to.Status = from.Status },
	Validate:             validation.ValidatePriorityLevelConfiguration,
	ValidateUpdate:       validation.ValidatePriorityLevelConfigurationUpdate,
	ValidateStatusUpdate: validation.ValidatePriorityLevelConfigurationStatusUpdate,
}

// NewStrategy returns the prioritylevelconfigurations strategy.
func NewStrategy(typer runtime.ObjectTyper) base.SpecStatusStrategy[*level] {
	return base.NewSpecStatus(typer, kind)
}

// NewStatusStrategy returns the prioritylevelconfigurations/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) base.SpecStatusStatusStrategy[*level] {
	return base.NewSpecStatusStatus(typer, kind)
}

// GetAttrs returns a PriorityLevelConfiguration's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches PriorityLevelConfigurations against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints priority levels as kube-apiserver does ("<none>" where a
// level has no limit or no queuing).
var Table = base.Table[*level]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Type", flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]),
		base.Col("NominalConcurrencyShares", flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]),
		base.Col("Queues", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queues"]),
		base.Col("HandSize", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["handSize"]),
		base.Col("QueueLengthLimit", flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queueLengthLimit"]),
		base.AgeColumn,
	},
	Row: func(l *level, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		var shares, queues, hand, length interface{} = "<none>", "<none>", "<none>", "<none>"
		if lim := l.Spec.Limited; lim != nil {
			if lim.NominalConcurrencyShares != nil {
				shares = int64(*lim.NominalConcurrencyShares)
			}
			if q := lim.LimitResponse.Queuing; q != nil {
				queues, hand, length = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
			}
		}
		return []interface{}{l.Name, string(l.Spec.Type), shares, queues, hand, length, base.Age(l.CreationTimestamp, now)}, nil
	},
}
