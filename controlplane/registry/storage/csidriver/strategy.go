// Package csidriver is the registry strategy for storage.k8s.io/v1 CSI
// drivers and their table (NAME ATTACHREQUIRED PODINFOONMOUNT
// STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE).
package csidriver

import (
	"context"
	"strconv"
	"strings"
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

// Strategy is the csidrivers strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the csidrivers strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, false)} }

// PrepareForCreate does nothing: a CSIDriver has no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: a CSIDriver has no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new CSIDriver.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateCSIDriver(obj.(*storagev1.CSIDriver))
}

// ValidateUpdate validates a CSIDriver update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateCSIDriverUpdate(obj.(*storagev1.CSIDriver), old.(*storagev1.CSIDriver))
}

// GetAttrs returns a CSIDriver's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches CSIDrivers against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints CSI drivers as kubectl get csidrivers does.
var Table = base.Table[*storagev1.CSIDriver]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("AttachRequired", storagev1.CSIDriverSpec{}.SwaggerDoc()["attachRequired"]),
		base.Col("PodInfoOnMount", storagev1.CSIDriverSpec{}.SwaggerDoc()["podInfoOnMount"]),
		base.Col("StorageCapacity", storagev1.CSIDriverSpec{}.SwaggerDoc()["storageCapacity"]),
		base.Col("TokenRequests", storagev1.CSIDriverSpec{}.SwaggerDoc()["tokenRequests"]),
		base.Col("RequiresRepublish", storagev1.CSIDriverSpec{}.SwaggerDoc()["requiresRepublish"]),
		base.Col("Modes", storagev1.CSIDriverSpec{}.SwaggerDoc()["volumeLifecycleModes"]),
		base.AgeColumn,
	},
	Row: func(d *storagev1.CSIDriver, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		tokens := "<unset>"
		if len(d.Spec.TokenRequests) > 0 {
			aud := make([]string, 0, len(d.Spec.TokenRequests))
			for _, t := range d.Spec.TokenRequests {
				aud = append(aud, t.Audience)
			}
			tokens = strings.Join(aud, ",")
		}
		modes := make([]string, 0, len(d.Spec.VolumeLifecycleModes))
		for _, m := range d.Spec.VolumeLifecycleModes {
			modes = append(modes, string(m))
		}
		return []interface{}{d.Name, boolCell(d.Spec.AttachRequired), boolCell(d.Spec.PodInfoOnMount), boolCell(d.Spec.StorageCapacity),
			tokens, boolCell(d.Spec.RequiresRepublish), base.OrNone(strings.Join(modes, ",")), base.Age(d.CreationTimestamp, now)}, nil
	},
}

func boolCell(b *bool) string {
	if b == nil {
		return "<unset>"
	}
	return strconv.FormatBool(*b)
}
