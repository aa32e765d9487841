// Package clusterrole is the registry strategy for rbac.authorization.k8s.io/v1
// cluster roles (create-on-update, as upstream) and their table (NAME CREATED AT).
package clusterrole

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

// Strategy is the clusterroles strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the clusterroles strategy; a PUT may create a cluster role.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, false)}
	s.CreateOnUpdate = true
	return s
}

// PrepareForCreate does nothing: a cluster role has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a cluster role has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new role.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateClusterRole(obj.(*rbacv1.ClusterRole))
}

// ValidateUpdate validates a cluster role update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClusterRoleUpdate(obj.(*rbacv1.ClusterRole), old.(*rbacv1.ClusterRole))
}

// GetAttrs returns a cluster role's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches cluster roles against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME CREATED AT.
var Table = base.Table[*rbacv1.ClusterRole]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.CreatedAtColumn},
	Row: func(r *rbacv1.ClusterRole, _ time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{r.Name, base.CreatedAt(r.CreationTimestamp)}, nil
	},
}
