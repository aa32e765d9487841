// Package serviceaccount describes core/v1 service accounts to the
// registry, and their table (NAME SECRETS AGE).
package serviceaccount

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes serviceaccounts.
var Kind = base.Kind[*v1.ServiceAccount]{
	Namespaced:     true,
	Validate:       validation.ValidateServiceAccount,
	ValidateUpdate: validation.ValidateServiceAccountUpdate,
	Table:          table,
}

// table prints NAME SECRETS AGE.
var table = base.Table[*v1.ServiceAccount]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.IntCol("Secrets", v1.ServiceAccount{}.SwaggerDoc()["secrets"]), base.AgeColumn},
	Row: func(sa *v1.ServiceAccount, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{sa.Name, int64(len(sa.Secrets)), base.Age(sa.CreationTimestamp, now)}, nil
	},
}
