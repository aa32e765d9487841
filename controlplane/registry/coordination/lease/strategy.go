// Package lease describes coordination.k8s.io/v1 leases to the registry
// (create-on-update, as upstream) and their table (NAME HOLDER AGE).
package lease

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes leases.
var Kind = base.Kind[*coordinationv1.Lease]{
	Namespaced: true, CreateOnUpdate: true,
	Validate:       validation.ValidateLease,
	ValidateUpdate: validation.ValidateLeaseUpdate,
	Table:          table,
}

// table prints NAME HOLDER AGE.
var table = base.Table[*coordinationv1.Lease]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.Col("Holder", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), base.AgeColumn},
	Row: func(l *coordinationv1.Lease, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []interface{}{l.Name, holder, base.Age(l.CreationTimestamp, now)}, nil
	},
}
