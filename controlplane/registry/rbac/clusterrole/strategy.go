// Package clusterrole describes rbac.authorization.k8s.io/v1 cluster
// roles to the registry (create-on-update, as upstream) and their table (NAME CREATED AT).
package clusterrole

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes clusterroles.
var Kind = base.Kind[*rbacv1.ClusterRole]{
	CreateOnUpdate: true,
	Validate:       validation.ValidateClusterRole,
	ValidateUpdate: validation.ValidateClusterRoleUpdate,
	Table:          table,
}

// table prints NAME CREATED AT.
var table = base.Table[*rbacv1.ClusterRole]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.CreatedAtColumn},
	Row: func(r *rbacv1.ClusterRole, _ time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{r.Name, base.CreatedAt(r.CreationTimestamp)}, nil
	},
}
