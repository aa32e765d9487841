// Package csinode describes storage.k8s.io/v1 CSINodes to the registry
// (drivers' nodeID and topology keys immutable) and their table (NAME
// DRIVERS AGE).
package csinode

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes csinodes.
var Kind = base.Kind[*storagev1.CSINode]{
	Validate:       validation.ValidateCSINode,
	ValidateUpdate: validation.ValidateCSINodeUpdate,
	Table:          table,
}

// table prints NAME DRIVERS AGE.
var table = base.Table[*storagev1.CSINode]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.IntCol("Drivers", "Drivers indicates the number of CSI drivers registered on the node"), base.AgeColumn},
	Row: func(n *storagev1.CSINode, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{n.Name, int64(len(n.Spec.Drivers)), base.Age(n.CreationTimestamp, now)}, nil
	},
}
