// Package persistentvolumeclaim describes core/v1 persistent volume
// claims to the registry: phase Pending on create, spec and status kept
// apart, and the table (NAME STATUS VOLUME CAPACITY ACCESS MODES
// STORAGECLASS VOLUMEATTRIBUTESCLASS AGE, wide: VOLUMEMODE).
package persistentvolumeclaim

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes persistentvolumeclaims.
var Kind = base.Kind[*v1.PersistentVolumeClaim]{
	APIVersion: "v1", Namespaced: true,
	Status: true,
	NewStatus: func(pvc *v1.PersistentVolumeClaim) {
		pvc.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}
	},
	Validate:             validation.ValidatePersistentVolumeClaim,
	ValidateUpdate:       validation.ValidatePersistentVolumeClaimUpdate,
	ValidateStatusUpdate: validation.ValidatePersistentVolumeClaimStatusUpdate,
	Table:                table,
}

// table prints claims as kubectl get pvc does.
var table = base.Table[*v1.PersistentVolumeClaim]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Status", v1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
		base.Col("Volume", v1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]),
		base.Col("Capacity", v1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
		base.Col("Access Modes", v1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
		base.Col("StorageClass", "StorageClass of the pvc"),
		base.Col("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
		base.AgeColumn,
		base.Wide(base.Col("VolumeMode", v1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"])),
	},
	Row: func(pvc *v1.PersistentVolumeClaim, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		phase := string(pvc.Status.Phase)
		if pvc.DeletionTimestamp != nil {
			phase = "Terminating"
		}
		capacity, modes := "", ""
		if pvc.Spec.VolumeName != "" {
			modes = base.AccessModes(pvc.Status.AccessModes)
			if q, ok := pvc.Status.Capacity[v1.ResourceStorage]; ok {
				capacity = q.String()
			}
		}
		class := ""
		if pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		vac := "<unset>"
		if pvc.Spec.VolumeAttributesClassName != nil && *pvc.Spec.VolumeAttributesClassName != "" {
			vac = *pvc.Spec.VolumeAttributesClassName
		}
		mode := "<unset>"
		if pvc.Spec.VolumeMode != nil {
			mode = string(*pvc.Spec.VolumeMode)
		}
		return []interface{}{pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class, vac, base.Age(pvc.CreationTimestamp, now), mode}, nil
	},
}
