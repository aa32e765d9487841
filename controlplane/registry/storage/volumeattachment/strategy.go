// Package volumeattachment describes storage.k8s.io/v1 VolumeAttachments
// to the registry (cluster-scoped; the spec is immutable, the status
// changes only through /status) and their table (NAME ATTACHER PV NODE
// ATTACHED AGE).
package volumeattachment

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes volumeattachments.
var Kind = base.Kind[*storagev1.VolumeAttachment]{
	APIVersion: "storage.k8s.io/v1", ConditionalUpdate: true,
	Status:          true, // the attacher reports it
	StatusKeepsMeta: true,
	StatusResets:    []string{"metadata", "spec"},
	Validate:        validation.ValidateVolumeAttachment,
	ValidateUpdate:  validation.ValidateVolumeAttachmentUpdate, // the spec may not change
	Table:           table,
}

// table prints volume attachments as kubectl get volumeattachments does.
var table = base.Table[*storagev1.VolumeAttachment]{
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
