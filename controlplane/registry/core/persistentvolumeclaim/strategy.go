// Package persistentvolumeclaim is the registry strategy for core/v1
// persistent volume claims: phase Pending on create, spec and status kept
// apart, and the table (NAME STATUS VOLUME CAPACITY ACCESS MODES
// STORAGECLASS VOLUMEATTRIBUTESCLASS AGE, wide: VOLUMEMODE).
package persistentvolumeclaim

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the persistentvolumeclaims strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the persistentvolumeclaims strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("v1", "status")
	return s
}

// PrepareForCreate sets the status to phase Pending.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*v1.PersistentVolumeClaim).Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}
}

// PrepareForUpdate keeps the stored status.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*v1.PersistentVolumeClaim).Status = old.(*v1.PersistentVolumeClaim).Status
}

// Validate validates a new claim.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidatePersistentVolumeClaim(obj.(*v1.PersistentVolumeClaim))
}

// ValidateUpdate validates a claim update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePersistentVolumeClaimUpdate(obj.(*v1.PersistentVolumeClaim), old.(*v1.PersistentVolumeClaim))
}

// StatusStrategy is the persistentvolumeclaims/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the persistentvolumeclaims/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*v1.PersistentVolumeClaim).Spec = old.(*v1.PersistentVolumeClaim).Spec
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePersistentVolumeClaimStatusUpdate(obj.(*v1.PersistentVolumeClaim), old.(*v1.PersistentVolumeClaim))
}

// GetAttrs returns a claim's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches claims against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints claims as kubectl get pvc does.
var Table = base.Table[*v1.PersistentVolumeClaim]{
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
