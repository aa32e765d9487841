// Package replicaset describes apps/v1 replica sets to the registry:
// status cleared on create and kept apart, metadata.generation bumped on
// spec changes, an immutable selector, the status.replicas field selector,
// and the table (NAME DESIRED CURRENT READY AGE, wide: CONTAINERS IMAGES
// SELECTOR).
package replicaset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

type replicaSet = appsv1.ReplicaSet

// podSpecWarnings are the pod template's warnings.
var podSpecWarnings = base.PodSpecWarnings("spec.template.spec", func(rs *replicaSet) *v1.PodSpec { return &rs.Spec.Template.Spec })

// Kind describes replicasets.
var Kind = base.Kind[*replicaSet]{
	APIVersion: "apps/v1", Namespaced: true,
	Status:               true,
	SpecGeneration:       true,
	Validate:             validation.ValidateReplicaSet,
	ValidateUpdate:       validation.ValidateReplicaSetUpdate,
	ValidateStatusUpdate: validation.ValidateReplicaSetStatusUpdate,
	Warnings:             podSpecWarnings,
	UpdateWarnings:       base.WhenChanged(func(rs *replicaSet) any { return rs.Spec.Template }, podSpecWarnings),
	Fields:               fieldsets.ReplicaSet,
	Table:                table,
}

// table prints replica sets as kubectl get replicasets does.
var table = base.Table[*replicaSet]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.IntCol("Desired", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		base.IntCol("Current", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		base.IntCol("Ready", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		base.AgeColumn,
		base.Wide(base.Col("Containers", "Names of each container in the template.")),
		base.Wide(base.Col("Images", "Images referenced by each container in the template.")),
		base.Wide(base.Col("Selector", appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"])),
	},
	Row: func(rs *replicaSet, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		desired := int32(0)
		if rs.Spec.Replicas != nil {
			desired = *rs.Spec.Replicas
		}
		names, images := base.ContainerCells(rs.Spec.Template.Spec.Containers)
		return []interface{}{rs.Name, int64(desired), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			base.Age(rs.CreationTimestamp, now), names, images, base.Selector(rs.Spec.Selector)}, nil
	},
}
