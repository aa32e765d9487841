// Package deployment describes apps/v1 deployments to the registry: status
// cleared on create and kept apart, metadata.generation bumped on spec (or
// annotation) changes, an immutable selector, and the table (NAME READY
// UP-TO-DATE AVAILABLE AGE, wide: CONTAINERS IMAGES SELECTOR).
package deployment

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type deployment = appsv1.Deployment

// podSpecWarnings are the pod template's warnings.
var podSpecWarnings = base.PodSpecWarnings("spec.template.spec", func(d *deployment) *v1.PodSpec { return &d.Spec.Template.Spec })

// Kind describes deployments. A /status write keeps the labels and
// annotations too.
var Kind = base.Kind[*deployment]{
	APIVersion: "apps/v1", Namespaced: true,
	Status:     true,
	Generation: func(d *deployment) any { return []any{d.Spec, d.Annotations} }, // annotations carry rollback requests
	PrepareStatusUpdate: func(to, from *deployment) {
		to.Labels, to.Annotations = from.Labels, from.Annotations
	},
	StatusResets:         []string{"spec", "metadata.labels", "metadata.annotations"},
	Validate:             validation.ValidateDeployment,
	ValidateUpdate:       validation.ValidateDeploymentUpdate,
	ValidateStatusUpdate: validation.ValidateDeploymentStatusUpdate,
	Warnings:             podSpecWarnings,
	UpdateWarnings:       base.WhenChanged(func(d *deployment) any { return d.Spec.Template }, podSpecWarnings),
	Table:                table,
}

// table prints deployments as kubectl get deployments does.
var table = base.Table[*deployment]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Ready", "Number of the pod with ready state"),
		base.IntCol("Up-to-date", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
		base.IntCol("Available", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
		base.AgeColumn,
		base.Wide(base.Col("Containers", "Names of each container in the template.")),
		base.Wide(base.Col("Images", "Images referenced by each container in the template.")),
		base.Wide(base.Col("Selector", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"])),
	},
	Row: func(d *deployment, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		desired := int32(0)
		if d.Spec.Replicas != nil {
			desired = *d.Spec.Replicas
		}
		names, images := base.ContainerCells(d.Spec.Template.Spec.Containers)
		return []interface{}{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, desired), int64(d.Status.UpdatedReplicas),
			int64(d.Status.AvailableReplicas), base.Age(d.CreationTimestamp, now), names, images, base.Selector(d.Spec.Selector)}, nil
	},
}
