// Package daemonset is the registry strategy for apps/v1 daemon sets:
// status cleared on create and kept apart, metadata.generation bumped on
// spec changes and the deprecated.daemonset.template.generation annotation
// on template changes (as upstream's apps/v1 conversion keeps it), an
// immutable selector, and the table (NAME DESIRED CURRENT READY UP-TO-DATE
// AVAILABLE NODE SELECTOR AGE, wide: CONTAINERS IMAGES SELECTOR).
package daemonset

import (
	"context"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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

// TemplateGenerationAnnotation counts a daemon set's template changes
// (upstream's apps/v1 form of the internal spec.templateGeneration).
const TemplateGenerationAnnotation = "deprecated.daemonset.template.generation"

// Strategy is the daemonsets strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the daemonsets strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("apps/v1", "status")
	return s
}

// PrepareForCreate clears the status, sets generation 1 and template
// generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ds := obj.(*appsv1.DaemonSet)
	ds.Status = appsv1.DaemonSetStatus{}
	ds.Generation = 1
	setTemplateGeneration(ds, 1)
}

// PrepareForUpdate keeps the status, bumps the generation on spec changes
// and the template generation on template changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	n.Status = o.Status
	gen := templateGeneration(o)
	if !apiequality.Semantic.DeepEqual(n.Spec.Template, o.Spec.Template) {
		gen++
	}
	setTemplateGeneration(n, gen)
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) {
		n.Generation = o.Generation + 1
	}
}

func templateGeneration(ds *appsv1.DaemonSet) int64 {
	n, err := strconv.ParseInt(ds.Annotations[TemplateGenerationAnnotation], 10, 64)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func setTemplateGeneration(ds *appsv1.DaemonSet, n int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[TemplateGenerationAnnotation] = strconv.FormatInt(n, 10)
}

// templateSpecPath is where the pod spec sits.
var templateSpecPath = field.NewPath("spec", "template", "spec")

// WarningsOnCreate returns the pod template's warnings.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return validation.WarningsForPodSpec(&obj.(*appsv1.DaemonSet).Spec.Template.Spec, templateSpecPath)
}

// WarningsOnUpdate returns the pod template's warnings when the template changed.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	n, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	if apiequality.Semantic.DeepEqual(n.Spec.Template, o.Spec.Template) {
		return nil
	}
	return validation.WarningsForPodSpec(&n.Spec.Template.Spec, templateSpecPath)
}

// Validate validates a new daemon set.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateDaemonSet(obj.(*appsv1.DaemonSet))
}

// ValidateUpdate validates a daemon set update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateDaemonSetUpdate(obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet))
}

// StatusStrategy is the daemonsets/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the daemonsets/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("apps/v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*appsv1.DaemonSet).Spec = old.(*appsv1.DaemonSet).Spec
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateDaemonSetStatusUpdate(obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet))
}

// GetAttrs returns a daemon set's labels and selectable fields (metadata only).
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches daemon sets against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints daemon sets as kubectl get daemonsets does.
var Table = base.Table[*appsv1.DaemonSet]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.IntCol("Desired", appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]),
		base.IntCol("Current", appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]),
		base.IntCol("Ready", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]),
		base.IntCol("Up-to-date", appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]),
		base.IntCol("Available", appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]),
		base.Col("Node Selector", corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
		base.AgeColumn,
		base.Wide(base.Col("Containers", "Names of each container in the template.")),
		base.Wide(base.Col("Images", "Images referenced by each container in the template.")),
		base.Wide(base.Col("Selector", appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"])),
	},
	Row: func(ds *appsv1.DaemonSet, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		s := ds.Status
		names, images := base.ContainerCells(ds.Spec.Template.Spec.Containers)
		return []interface{}{ds.Name, int64(s.DesiredNumberScheduled), int64(s.CurrentNumberScheduled), int64(s.NumberReady),
			int64(s.UpdatedNumberScheduled), int64(s.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
			base.Age(ds.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(ds.Spec.Selector)}, nil
	},
}
