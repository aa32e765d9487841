// Package storageclass is the registry strategy for storage.k8s.io/v1
// storage classes (parameters, provisioner, reclaim policy and binding
// mode immutable) and their table (NAME PROVISIONER RECLAIMPOLICY
// VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE; the default class marked).
package storageclass

import (
	"context"
	"strconv"
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

// DefaultClassAnnotation marks the cluster's default storage class.
const DefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// Strategy is the storageclasses strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the storageclasses strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, false)} }

// PrepareForCreate does nothing: a storage class has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a storage class has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new storage class.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateStorageClass(obj.(*storagev1.StorageClass))
}

// ValidateUpdate validates a storage class update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateStorageClassUpdate(obj.(*storagev1.StorageClass), old.(*storagev1.StorageClass))
}

// GetAttrs returns a storage class's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches storage classes against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints storage classes as kubectl get storageclass does.
var Table = base.Table[*storagev1.StorageClass]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Provisioner", storagev1.StorageClass{}.SwaggerDoc()["provisioner"]),
		base.Col("ReclaimPolicy", storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"]),
		base.Col("VolumeBindingMode", storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"]),
		base.Col("AllowVolumeExpansion", storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"]),
		base.AgeColumn,
	},
	Row: func(sc *storagev1.StorageClass, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		name := sc.Name
		if sc.Annotations[DefaultClassAnnotation] == "true" {
			name += " (default)"
		}
		reclaim, binding := "Delete", "Immediate"
		if sc.ReclaimPolicy != nil {
			reclaim = string(*sc.ReclaimPolicy)
		}
		if sc.VolumeBindingMode != nil {
			binding = string(*sc.VolumeBindingMode)
		}
		expand := false
		if sc.AllowVolumeExpansion != nil {
			expand = *sc.AllowVolumeExpansion
		}
		return []interface{}{name, sc.Provisioner, reclaim, binding, strconv.FormatBool(expand), base.Age(sc.CreationTimestamp, now)}, nil
	},
}
