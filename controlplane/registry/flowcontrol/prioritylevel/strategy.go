// Package prioritylevel describes flowcontrol.apiserver.k8s.io/v1
// PriorityLevelConfigurations to the registry (spec and
// /status) and their table (NAME TYPE NOMINALCONCURRENCYSHARES QUEUES
// HANDSIZE QUEUELENGTHLIMIT AGE).
package prioritylevel

import (
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type level = flowcontrolv1.PriorityLevelConfiguration

// Kind describes prioritylevelconfigurations.
var Kind = base.Kind[*level]{
	APIVersion:           "flowcontrol.apiserver.k8s.io/v1",
	Status:               true,
	SpecGeneration:       true,
	StatusKeepsMeta:      true,
	StatusResets:         []string{"metadata", "spec"},
	Validate:             validation.ValidatePriorityLevelConfiguration,
	ValidateUpdate:       validation.ValidatePriorityLevelConfigurationUpdate,
	ValidateStatusUpdate: validation.ValidatePriorityLevelConfigurationStatusUpdate,
	Table:                table,
}

// table prints priority levels as kube-apiserver does ("<none>" where a
// level has no limit or no queuing).
var table = base.Table[*level]{
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
