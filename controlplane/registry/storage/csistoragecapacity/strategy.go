// Package csistoragecapacity is the registry strategy for storage.k8s.io/v1
// CSIStorageCapacities (namespaced; nodeTopology and storageClassName are
// immutable) and their table (NAME STORAGECLASSNAME CAPACITY).
package csistoragecapacity

import (
	"context"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the csistoragecapacities strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the csistoragecapacities strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, true)} }

// PrepareForCreate does nothing: a CSIStorageCapacity has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a CSIStorageCapacity has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// AllowUnconditionalUpdate is false, as upstream.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// Validate validates a new CSIStorageCapacity.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateCSIStorageCapacity(obj.(*storagev1.CSIStorageCapacity))
}

// ValidateUpdate validates an update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateCSIStorageCapacityUpdate(obj.(*storagev1.CSIStorageCapacity), old.(*storagev1.CSIStorageCapacity))
}

// GetAttrs returns a CSIStorageCapacity's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches CSIStorageCapacities against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME STORAGECLASSNAME CAPACITY.
var Table = base.Table[*storagev1.CSIStorageCapacity]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("StorageClassName", storagev1.CSIStorageCapacity{}.SwaggerDoc()["storageClassName"]),
		base.Col("Capacity", storagev1.CSIStorageCapacity{}.SwaggerDoc()["capacity"]),
	},
	Row: func(c *storagev1.CSIStorageCapacity, _ time.Time) ([]interface{}, []metav1.TableRowCondition) {
		capacity := "<unset>"
		if c.Capacity != nil {
			capacity = c.Capacity.String()
		}
		return []interface{}{c.Name, c.StorageClassName, capacity}, nil
	},
}
