// Package clusterrolebinding is the registry strategy for
// rbac.authorization.k8s.io/v1 cluster cluster role bindings (roleRef immutable,
// create-on-update) and their table (NAME ROLE AGE, wide: USERS GROUPS
// SERVICEACCOUNTS).
package clusterrolebinding

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

// Strategy is the clusterrolebindings strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the clusterrolebindings strategy; a PUT may create a binding.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, false)}
	s.CreateOnUpdate = true
	return s
}

// PrepareForCreate does nothing: a binding has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a binding has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new cluster role binding.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateClusterRoleBinding(obj.(*rbacv1.ClusterRoleBinding))
}

// ValidateUpdate validates a cluster role binding update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClusterRoleBindingUpdate(obj.(*rbacv1.ClusterRoleBinding), old.(*rbacv1.ClusterRoleBinding))
}

// GetAttrs returns a cluster role binding's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches cluster role bindings against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints cluster role bindings as kubectl get clusterrolebindings does.
var Table = base.Table[*rbacv1.ClusterRoleBinding]{
	Columns: base.BindingColumns,
	Row: func(rb *rbacv1.ClusterRoleBinding, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return base.BindingRow(rb.Name, rb.CreationTimestamp, rb.RoleRef, rb.Subjects, now), nil
	},
}
