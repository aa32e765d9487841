// Package lease is the registry strategy for coordination.k8s.io/v1 leases
// (create-on-update, as upstream) and their table (NAME HOLDER AGE).
package lease

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the leases strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the leases strategy; a PUT may create a lease.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.CreateOnUpdate = true
	return s
}

// PrepareForCreate does nothing: a lease has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a lease has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new lease.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateLease(obj.(*coordinationv1.Lease))
}

// ValidateUpdate validates a lease update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateLeaseUpdate(obj.(*coordinationv1.Lease), old.(*coordinationv1.Lease))
}

// GetAttrs returns a lease's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches leases against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME HOLDER AGE.
var Table = base.Table[*coordinationv1.Lease]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.Col("Holder", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), base.AgeColumn},
	Row: func(l *coordinationv1.Lease, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []interface{}{l.Name, holder, base.Age(l.CreationTimestamp, now)}, nil
	},
}
