// Package persistentvolume describes core/v1 persistent volumes to the
// registry: phase Pending on create, spec and status kept apart,
// and the table (NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM
// STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE, wide: VOLUMEMODE).
package persistentvolume

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes persistentvolumes.
var Kind = base.Kind[*v1.PersistentVolume]{
	APIVersion:           "v1",
	Status:               true,
	NewStatus:            func(pv *v1.PersistentVolume) { pv.Status = v1.PersistentVolumeStatus{Phase: v1.VolumePending} },
	PrepareStatusUpdate:  stampPhaseTransition,
	Validate:             validation.ValidatePersistentVolume,
	ValidateUpdate:       validation.ValidatePersistentVolumeUpdate,
	ValidateStatusUpdate: validation.ValidatePersistentVolumeStatusUpdate,
	Table:                table,
}

// stampPhaseTransition records the time of a phase change a /status write
// makes without one.
func stampPhaseTransition(n, o *v1.PersistentVolume) {
	if n.Status.Phase != o.Status.Phase && n.Status.LastPhaseTransitionTime == nil {
		now := metav1.Now()
		n.Status.LastPhaseTransitionTime = &now
	}
}

// table prints persistent volumes as kubectl get pv does.
var table = base.Table[*v1.PersistentVolume]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Capacity", v1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]),
		base.Col("Access Modes", v1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]),
		base.Col("Reclaim Policy", v1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]),
		base.Col("Status", v1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
		base.Col("Claim", v1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]),
		base.Col("StorageClass", "StorageClass of the pv"),
		base.Col("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
		base.Col("Reason", v1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
		base.AgeColumn,
		base.Wide(base.Col("VolumeMode", v1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"])),
	},
	Row: func(pv *v1.PersistentVolume, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		claim := ""
		if pv.Spec.ClaimRef != nil {
			claim = pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name
		}
		capacity := ""
		if q, ok := pv.Spec.Capacity[v1.ResourceStorage]; ok {
			capacity = q.String()
		}
		phase := string(pv.Status.Phase)
		if pv.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		vac := "<unset>"
		if pv.Spec.VolumeAttributesClassName != nil && *pv.Spec.VolumeAttributesClassName != "" {
			vac = *pv.Spec.VolumeAttributesClassName
		}
		mode := "<unset>"
		if pv.Spec.VolumeMode != nil {
			mode = string(*pv.Spec.VolumeMode)
		}
		return []interface{}{pv.Name, capacity, base.AccessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
			phase, claim, pv.Spec.StorageClassName, vac, pv.Status.Reason, base.Age(pv.CreationTimestamp, now), mode}, nil
	},
}
