// Package configmap is the registry strategy for core/v1 configmaps:
// validation (keys, size, immutability) and the table (NAME DATA AGE).
package configmap

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

// Strategy is the configmaps strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the configmaps strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, true)} }

// PrepareForCreate does nothing: a configmap has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a configmap has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new configmap.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateConfigMap(obj.(*v1.ConfigMap))
}

// ValidateUpdate validates a configmap update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateConfigMapUpdate(obj.(*v1.ConfigMap), old.(*v1.ConfigMap))
}

// GetAttrs returns a configmap's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches configmaps against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME DATA AGE.
var Table = base.Table[*v1.ConfigMap]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.IntCol("Data", "Number of data in configmap"), base.AgeColumn},
	Row: func(cm *v1.ConfigMap, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), base.Age(cm.CreationTimestamp, now)}, nil
	},
}
