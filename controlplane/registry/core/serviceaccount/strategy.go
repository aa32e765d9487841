// Package serviceaccount is the registry strategy for core/v1 service
// accounts and their table (NAME SECRETS AGE).
package serviceaccount

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the serviceaccounts strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the serviceaccounts strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, true)} }

// PrepareForCreate does nothing: a service account has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a service account has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new service account.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateServiceAccount(obj.(*v1.ServiceAccount))
}

// ValidateUpdate validates a service account update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateServiceAccountUpdate(obj.(*v1.ServiceAccount), old.(*v1.ServiceAccount))
}

// GetAttrs returns a service account's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches service accounts against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME SECRETS AGE.
var Table = base.Table[*v1.ServiceAccount]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.IntCol("Secrets", v1.ServiceAccount{}.SwaggerDoc()["secrets"]), base.AgeColumn},
	Row: func(sa *v1.ServiceAccount, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{sa.Name, int64(len(sa.Secrets)), base.Age(sa.CreationTimestamp, now)}, nil
	},
}
