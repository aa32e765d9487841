// Package persistentvolume is the registry strategy for core/v1
// persistent volumes: phase Pending on create, spec and status kept apart,
// and the table (NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM
// STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE, wide: VOLUMEMODE).
package persistentvolume

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

// Strategy is the persistentvolumes strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the persistentvolumes strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, false)}
	s.Reset = base.Reset("v1", "status")
	return s
}

// PrepareForCreate sets the status to phase Pending.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*v1.PersistentVolume).Status = v1.PersistentVolumeStatus{Phase: v1.VolumePending}
}

// PrepareForUpdate keeps the stored status.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*v1.PersistentVolume).Status = old.(*v1.PersistentVolume).Status
}

// Validate validates a new persistent volume.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidatePersistentVolume(obj.(*v1.PersistentVolume))
}

// ValidateUpdate validates a persistent volume update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePersistentVolumeUpdate(obj.(*v1.PersistentVolume), old.(*v1.PersistentVolume))
}

// StatusStrategy is the persistentvolumes/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the persistentvolumes/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec; a phase change records its time.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*v1.PersistentVolume), old.(*v1.PersistentVolume)
	n.Spec = o.Spec
	if n.Status.Phase != o.Status.Phase && n.Status.LastPhaseTransitionTime == nil {
		now := metav1.Now()
		n.Status.LastPhaseTransitionTime = &now
	}
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePersistentVolumeStatusUpdate(obj.(*v1.PersistentVolume), old.(*v1.PersistentVolume))
}

// GetAttrs returns a persistent volume's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches persistent volumes against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints persistent volumes as kubectl get pv does.
var Table = base.Table[*v1.PersistentVolume]{
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
