// Package csidriver describes storage.k8s.io/v1 CSI drivers to the
// registry, and their table (NAME ATTACHREQUIRED PODINFOONMOUNT
// STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE).
package csidriver

import (
	"strconv"
	"strings"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes csidrivers.
var Kind = base.Kind[*storagev1.CSIDriver]{
	Validate:       validation.ValidateCSIDriver,
	ValidateUpdate: validation.ValidateCSIDriverUpdate,
	Table:          table,
}

// table prints CSI drivers as kubectl get csidrivers does.
var table = base.Table[*storagev1.CSIDriver]{
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
