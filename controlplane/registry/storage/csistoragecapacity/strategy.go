// Package csistoragecapacity describes storage.k8s.io/v1
// CSIStorageCapacities to the registry (namespaced; nodeTopology and storageClassName are
// immutable) and their table (NAME STORAGECLASSNAME CAPACITY).
package csistoragecapacity

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes csistoragecapacities.
var Kind = base.Kind[*storagev1.CSIStorageCapacity]{
	Namespaced: true, ConditionalUpdate: true,
	Validate:       validation.ValidateCSIStorageCapacity,
	ValidateUpdate: validation.ValidateCSIStorageCapacityUpdate,
	Table:          table,
}

// table prints NAME STORAGECLASSNAME CAPACITY.
var table = base.Table[*storagev1.CSIStorageCapacity]{
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
