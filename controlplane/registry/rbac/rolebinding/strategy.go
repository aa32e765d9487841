// Package rolebinding is the registry strategy for
// rbac.authorization.k8s.io/v1 role bindings (roleRef immutable,
// create-on-update) and their table (NAME ROLE AGE, wide: USERS GROUPS
// SERVICEACCOUNTS).
package rolebinding

import (
	"context"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the rolebindings strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the rolebindings strategy; a PUT may create a binding.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.CreateOnUpdate = true
	return s
}

// PrepareForCreate does nothing: a binding has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a binding has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new role binding.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateRoleBinding(obj.(*rbacv1.RoleBinding))
}

// ValidateUpdate validates a role binding update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateRoleBindingUpdate(obj.(*rbacv1.RoleBinding), old.(*rbacv1.RoleBinding))
}

// GetAttrs returns a role binding's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches role bindings against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints role bindings as kubectl get rolebindings does.
var Table = base.Table[*rbacv1.RoleBinding]{
	Columns: base.BindingColumns,
	Row: func(rb *rbacv1.RoleBinding, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return base.BindingRow(rb.Name, rb.CreationTimestamp, rb.RoleRef, rb.Subjects, now), nil
	},
}
