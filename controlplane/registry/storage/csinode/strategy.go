// Package csinode is the registry strategy for storage.k8s.io/v1 CSINodes
// (drivers' nodeID and topology keys immutable) and their table (NAME
// DRIVERS AGE).
package csinode

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

// Strategy is the csinodes strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the csinodes strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, false)} }

// PrepareForCreate does nothing: a CSINode has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a CSINode has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new CSINode.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateCSINode(obj.(*storagev1.CSINode))
}

// ValidateUpdate validates a CSINode update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateCSINodeUpdate(obj.(*storagev1.CSINode), old.(*storagev1.CSINode))
}

// GetAttrs returns a CSINode's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches CSINodes against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME DRIVERS AGE.
var Table = base.Table[*storagev1.CSINode]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.IntCol("Drivers", "Drivers indicates the number of CSI drivers registered on the node"), base.AgeColumn},
	Row: func(n *storagev1.CSINode, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{n.Name, int64(len(n.Spec.Drivers)), base.Age(n.CreationTimestamp, now)}, nil
	},
}
