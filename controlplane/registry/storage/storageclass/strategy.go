// Package storageclass describes storage.k8s.io/v1 storage classes to
// the registry (parameters, provisioner, reclaim policy and binding
// mode immutable) and their table (NAME PROVISIONER RECLAIMPOLICY
// VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE; the default class marked).
package storageclass

import (
	"strconv"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// DefaultClassAnnotation marks the cluster's default storage class.
const DefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// Kind describes storageclasses.
var Kind = base.Kind[*storagev1.StorageClass]{
	Validate:       validation.ValidateStorageClass,
	ValidateUpdate: validation.ValidateStorageClassUpdate,
	Table:          table,
}

// table prints storage classes as kubectl get storageclass does.
var table = base.Table[*storagev1.StorageClass]{
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
