// Package role is the registry strategy for rbac.authorization.k8s.io/v1
// roles (create-on-update, as upstream) and their table (NAME CREATED AT).
package role

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

// Strategy is the roles strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the roles strategy; a PUT may create a role.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.CreateOnUpdate = true
	return s
}

// PrepareForCreate does nothing: a role has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a role has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new role.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateRole(obj.(*rbacv1.Role))
}

// ValidateUpdate validates a role update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateRoleUpdate(obj.(*rbacv1.Role), old.(*rbacv1.Role))
}

// GetAttrs returns a role's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches roles against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME CREATED AT.
var Table = base.Table[*rbacv1.Role]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.CreatedAtColumn},
	Row: func(r *rbacv1.Role, _ time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{r.Name, base.CreatedAt(r.CreationTimestamp)}, nil
	},
}
