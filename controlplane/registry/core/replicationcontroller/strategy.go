// Package replicationcontroller describes core/v1 replication
// controllers to the registry: status cleared on create and kept apart,
// metadata.generation bumped on spec changes, dependents orphaned by
// default on delete (core/v1's backward-compatible policy), the
// status.replicas field selector, and the table (NAME DESIRED CURRENT READY
// AGE, wide: CONTAINERS IMAGES SELECTOR).
package replicationcontroller

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

type controller = v1.ReplicationController

// Kind describes replicationcontrollers.
var Kind = base.Kind[*controller]{
	APIVersion: "v1", Namespaced: true,
	Status: true,
	// dependents orphaned by default, core/v1's backward-compatible policy
	DefaultGC:            rest.OrphanDependents,
	SpecGeneration:       true,
	Validate:             validation.ValidateReplicationController,
	ValidateUpdate:       validation.ValidateReplicationControllerUpdate,
	ValidateStatusUpdate: validation.ValidateReplicationControllerStatusUpdate,
	Warnings:             base.WithPodNameWarning(podSpecWarnings),
	UpdateWarnings:       base.WhenChanged(base.Generation, podSpecWarnings),
	Fields:               fieldsets.ReplicationController,
	Table:                table,
}

// podSpecWarnings are the pod template's warnings.
var podSpecWarnings = base.PodSpecWarnings("spec.template.spec", func(rc *controller) *v1.PodSpec {
	if rc.Spec.Template == nil {
		return nil
	}
	return &rc.Spec.Template.Spec
})

// table prints replication controllers as kubectl get rc does.
var table = base.Table[*controller]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.IntCol("Desired", v1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
		base.IntCol("Current", v1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
		base.IntCol("Ready", v1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
		base.AgeColumn,
		base.Wide(base.Col("Containers", "Names of each container in the template.")),
		base.Wide(base.Col("Images", "Images referenced by each container in the template.")),
		base.Wide(base.Col("Selector", v1.ReplicationControllerSpec{}.SwaggerDoc()["selector"])),
	},
	Row: func(rc *controller, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		desired := int32(0)
		if rc.Spec.Replicas != nil {
			desired = *rc.Spec.Replicas
		}
		var names, images string
		if rc.Spec.Template != nil {
			names, images = base.ContainerCells(rc.Spec.Template.Spec.Containers)
		}
		return []interface{}{rc.Name, int64(desired), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
			base.Age(rc.CreationTimestamp, now), names, images, labels.FormatLabels(rc.Spec.Selector)}, nil
	},
}
