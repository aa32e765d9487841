// Package limitrange describes core/v1 limit ranges to the registry, and
// their table (NAME CREATED AT).
package limitrange

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes limitranges.
var Kind = base.Kind[*v1.LimitRange]{
	Namespaced:     true,
	Validate:       validation.ValidateLimitRange,
	ValidateUpdate: validation.ValidateLimitRangeUpdate,
	Table:          table,
}

// table prints limit ranges as kubectl get limitranges does.
var table = base.Table[*v1.LimitRange]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	Row: func(lr *v1.LimitRange, _ time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{lr.Name, lr.CreationTimestamp.UTC().Format(time.RFC3339)}, nil
	},
}
