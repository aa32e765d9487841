// Package configmap describes core/v1 configmaps to the registry:
// validation (keys, size, immutability) and the table (NAME DATA AGE).
package configmap

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes configmaps.
var Kind = base.Kind[*v1.ConfigMap]{
	Namespaced:     true,
	Validate:       validation.ValidateConfigMap,
	ValidateUpdate: validation.ValidateConfigMapUpdate,
	Table:          table,
}

// table prints NAME DATA AGE.
var table = base.Table[*v1.ConfigMap]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.IntCol("Data", "Number of data in configmap"), base.AgeColumn},
	Row: func(cm *v1.ConfigMap, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), base.Age(cm.CreationTimestamp, now)}, nil
	},
}
