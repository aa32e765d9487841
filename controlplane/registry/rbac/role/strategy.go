// Package role describes rbac.authorization.k8s.io/v1 roles to the
// registry (create-on-update, as upstream) and their table (NAME CREATED AT).
package role

import (
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes roles.
var Kind = base.Kind[*rbacv1.Role]{
	Namespaced: true, CreateOnUpdate: true,
	Validate:       validation.ValidateRole,
	ValidateUpdate: validation.ValidateRoleUpdate,
	Table:          table,
}

// table prints NAME CREATED AT.
var table = base.Table[*rbacv1.Role]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.CreatedAtColumn},
	Row: func(r *rbacv1.Role, _ time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{r.Name, base.CreatedAt(r.CreationTimestamp)}, nil
	},
}
