// Package rolebinding describes rbac.authorization.k8s.io/v1 role
// bindings to the registry (roleRef immutable,
// create-on-update) and their table (NAME ROLE AGE, wide: USERS GROUPS
// SERVICEACCOUNTS).
package rolebinding

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes rolebindings.
var Kind = base.Kind[*rbacv1.RoleBinding]{
	Namespaced: true, CreateOnUpdate: true,
	Validate:       validation.ValidateRoleBinding,
	ValidateUpdate: validation.ValidateRoleBindingUpdate,
	Table:          table,
}

// table prints role bindings as kubectl get rolebindings does.
var table = base.Table[*rbacv1.RoleBinding]{
	Columns: base.BindingColumns,
	Row: func(rb *rbacv1.RoleBinding, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return base.BindingRow(rb.Name, rb.CreationTimestamp, rb.RoleRef, rb.Subjects, now), nil
	},
}
