// Package clusterrolebinding describes rbac.authorization.k8s.io/v1
// cluster role bindings to the registry (roleRef immutable,
// create-on-update) and their table (NAME ROLE AGE, wide: USERS GROUPS
// SERVICEACCOUNTS).
package clusterrolebinding

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes clusterrolebindings.
var Kind = base.Kind[*rbacv1.ClusterRoleBinding]{
	CreateOnUpdate: true,
	Validate:       validation.ValidateClusterRoleBinding,
	ValidateUpdate: validation.ValidateClusterRoleBindingUpdate,
	Table:          table,
}

// table prints cluster role bindings as kubectl get clusterrolebindings does.
var table = base.Table[*rbacv1.ClusterRoleBinding]{
	Columns: base.BindingColumns,
	Row: func(rb *rbacv1.ClusterRoleBinding, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return base.BindingRow(rb.Name, rb.CreationTimestamp, rb.RoleRef, rb.Subjects, now), nil
	},
}
