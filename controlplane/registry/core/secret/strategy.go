// Package secret is the registry strategy for core/v1 secrets: validation
// (keys, size, per-type keys, immutable type and data), the type field
// selector, and the table (NAME TYPE DATA AGE).
package secret

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

// Strategy is the secrets strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the secrets strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, true)} }

// PrepareForCreate merges stringData into data (a secret has no status).
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	mergeStringData(obj.(*v1.Secret))
}

// PrepareForUpdate merges stringData into data (a secret has no status).
func (Strategy) PrepareForUpdate(_ context.Context, obj, _ runtime.Object) {
	mergeStringData(obj.(*v1.Secret))
}

// mergeStringData moves stringData into data, a key of stringData taking
// precedence over the same key of data: stringData is write-only, as
// upstream's v1 conversion makes it, and is never stored or returned.
func mergeStringData(s *v1.Secret) {
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// Validate validates a new secret.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateSecret(obj.(*v1.Secret))
}

// ValidateUpdate validates a secret update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSecretUpdate(obj.(*v1.Secret), old.(*v1.Secret))
}

// GetAttrs returns a secret's labels and selectable fields (type).
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Secret(o.(*v1.Secret)) })

// Predicate matches secrets against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME TYPE DATA AGE.
var Table = base.Table[*v1.Secret]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn,
		base.Col("Type", v1.Secret{}.SwaggerDoc()["type"]),
		base.IntCol("Data", v1.Secret{}.SwaggerDoc()["data"]), base.AgeColumn},
	Row: func(s *v1.Secret, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), base.Age(s.CreationTimestamp, now)}, nil
	},
}
