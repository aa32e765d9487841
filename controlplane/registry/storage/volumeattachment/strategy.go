// Package volumeattachment is the registry strategy for storage.k8s.io/v1
// VolumeAttachments (cluster-scoped; the spec is immutable, the status
// changes only through /status) and their table (NAME ATTACHER PV NODE
// ATTACHED AGE).
package volumeattachment

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

// Strategy is the volumeattachments strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the volumeattachments strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, false)}
	s.Reset = base.Reset("storage.k8s.io/v1", "status")
	return s
}

// PrepareForCreate clears the status: the attacher reports it.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*storagev1.VolumeAttachment).Status = storagev1.VolumeAttachmentStatus{}
}

// PrepareForUpdate keeps the stored status.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*storagev1.VolumeAttachment).Status = old.(*storagev1.VolumeAttachment).Status
}

// AllowUnconditionalUpdate is false, as upstream.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// Validate validates a new VolumeAttachment.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateVolumeAttachment(obj.(*storagev1.VolumeAttachment))
}

// ValidateUpdate validates an update: the spec may not change.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateVolumeAttachmentUpdate(obj.(*storagev1.VolumeAttachment), old.(*storagev1.VolumeAttachment))
}

// StatusStrategy is the volumeattachments/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the /status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("storage.k8s.io/v1", "metadata", "spec")
	return s
}

// PrepareForUpdate keeps the stored spec and metadata.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newVA, oldVA := obj.(*storagev1.VolumeAttachment), old.(*storagev1.VolumeAttachment)
	newVA.Spec = oldVA.Spec
	metav1.ResetObjectMetaForStatus(&newVA.ObjectMeta, &oldVA.ObjectMeta)
}

// GetAttrs returns a VolumeAttachment's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches VolumeAttachments against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints volume attachments as kubectl get volumeattachments does.
var Table = base.Table[*storagev1.VolumeAttachment]{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
		base.Col("PV", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]),
		base.Col("Node", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]),
		{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
		base.AgeColumn,
	},
	Row: func(va *storagev1.VolumeAttachment, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		pv := ""
		if va.Spec.Source.PersistentVolumeName != nil {
			pv = *va.Spec.Source.PersistentVolumeName
		}
		return []interface{}{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, base.Age(va.CreationTimestamp, now)}, nil
	},
}
