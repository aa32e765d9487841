// Package secret describes core/v1 secrets to the registry: validation
// (keys, size, per-type keys, immutable type and data), the type field
// selector, and the table (NAME TYPE DATA AGE).
package secret

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Kind describes secrets.
var Kind = base.Kind[*v1.Secret]{
	Namespaced:     true,
	PrepareCreate:  func(_ context.Context, s *v1.Secret) { mergeStringData(s) },
	PrepareUpdate:  func(s, _ *v1.Secret) { mergeStringData(s) },
	Validate:       validation.ValidateSecret,
	ValidateUpdate: validation.ValidateSecretUpdate,
	Fields:         fieldsets.Secret,
	Table:          table,
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

// table prints NAME TYPE DATA AGE.
var table = base.Table[*v1.Secret]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn,
		base.Col("Type", v1.Secret{}.SwaggerDoc()["type"]),
		base.IntCol("Data", v1.Secret{}.SwaggerDoc()["data"]), base.AgeColumn},
	Row: func(s *v1.Secret, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), base.Age(s.CreationTimestamp, now)}, nil
	},
}
