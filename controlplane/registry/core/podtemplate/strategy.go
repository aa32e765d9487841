// Package podtemplate is the registry strategy for core/v1 PodTemplates
// (metadata.generation counts template changes) and their table (NAME
// CONTAINERS IMAGES POD LABELS).
package podtemplate

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the podtemplates strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the podtemplates strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, true)} }

// PrepareForCreate sets metadata.generation to 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*v1.PodTemplate).Generation = 1
}

// PrepareForUpdate bumps metadata.generation when the template changed.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newT, oldT := obj.(*v1.PodTemplate), old.(*v1.PodTemplate)
	if !apiequality.Semantic.DeepEqual(newT.Template, oldT.Template) {
		newT.Generation = oldT.Generation + 1
	}
}

// Validate validates a new PodTemplate.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidatePodTemplate(obj.(*v1.PodTemplate))
}

// ValidateUpdate validates a PodTemplate update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodTemplateUpdate(obj.(*v1.PodTemplate), old.(*v1.PodTemplate))
}

// WarningsOnCreate returns the pod warnings for the template's spec.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return validation.WarningsForPodSpec(&obj.(*v1.PodTemplate).Template.Spec, field.NewPath("template", "spec"))
}

// WarningsOnUpdate returns the pod warnings for a changed template.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	newT, oldT := obj.(*v1.PodTemplate), old.(*v1.PodTemplate)
	if newT.Generation == oldT.Generation {
		return nil
	}
	return validation.WarningsForPodSpec(&newT.Template.Spec, field.NewPath("template", "spec"))
}

// GetAttrs returns a PodTemplate's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches PodTemplates against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints pod templates as kubectl get podtemplates does.
var Table = base.Table[*v1.PodTemplate]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Containers", "Names of each container in the template."),
		base.Col("Images", "Images referenced by each container in the template."),
		base.Col("Pod Labels", "The labels for the pod template."),
	},
	Row: func(t *v1.PodTemplate, _ time.Time) ([]interface{}, []metav1.TableRowCondition) {
		names, images := base.ContainerCells(t.Template.Spec.Containers)
		return []interface{}{t.Name, names, images, labels.FormatLabels(t.Template.Labels)}, nil
	},
}
