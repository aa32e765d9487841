// Package deployment is the registry strategy for apps/v1 deployments:
// status cleared on create and kept apart, metadata.generation bumped on
// spec (or annotation) changes, an immutable selector, and the table (NAME
// READY UP-TO-DATE AVAILABLE AGE, wide: CONTAINERS IMAGES SELECTOR).
package deployment

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the deployments strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the deployments strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("apps/v1", "status")
	return s
}

// PrepareForCreate clears the status and sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	d := obj.(*appsv1.Deployment)
	d.Status = appsv1.DeploymentStatus{}
	d.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation when the spec
// or the annotations (rollback requests) changed.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	n.Status = o.Status
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) || !apiequality.Semantic.DeepEqual(n.Annotations, o.Annotations) {
		n.Generation = o.Generation + 1
	}
}

// WarningsOnCreate returns the pod template's warnings.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	d := obj.(*appsv1.Deployment)
	return validation.WarningsForPodSpec(&d.Spec.Template.Spec, templateSpecPath)
}

// WarningsOnUpdate returns the pod template's warnings when the template changed.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	if apiequality.Semantic.DeepEqual(d.Spec.Template, o.Spec.Template) {
		return nil
	}
	return validation.WarningsForPodSpec(&d.Spec.Template.Spec, templateSpecPath)
}

// templateSpecPath is where a workload's pod spec sits.
var templateSpecPath = field.NewPath("spec", "template", "spec")

// Validate validates a new deployment.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateDeployment(obj.(*appsv1.Deployment))
}

// ValidateUpdate validates a deployment update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateDeploymentUpdate(obj.(*appsv1.Deployment), old.(*appsv1.Deployment))
}

// StatusStrategy is the deployments/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the deployments/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("apps/v1", "spec", "metadata.labels", "metadata.annotations")
	return s
}

// PrepareForUpdate keeps the spec, labels and annotations.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	n.Spec = o.Spec
	n.Labels = o.Labels
	n.Annotations = o.Annotations
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateDeploymentStatusUpdate(obj.(*appsv1.Deployment), old.(*appsv1.Deployment))
}

// GetAttrs returns a deployment's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches deployments against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints deployments as kubectl get deployments does.
var Table = base.Table[*appsv1.Deployment]{
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
	Row: func(d *appsv1.Deployment, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		desired := int32(0)
		if d.Spec.Replicas != nil {
			desired = *d.Spec.Replicas
		}
		names, images := base.ContainerCells(d.Spec.Template.Spec.Containers)
		return []interface{}{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, desired), int64(d.Status.UpdatedReplicas),
			int64(d.Status.AvailableReplicas), base.Age(d.CreationTimestamp, now), names, images, base.Selector(d.Spec.Selector)}, nil
	},
}
