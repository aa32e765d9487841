// Package daemonset describes apps/v1 daemon sets to the registry:
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
	"k8s.io/apimachinery/pkg/labels"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// TemplateGenerationAnnotation counts a daemon set's template changes
// (upstream's apps/v1 form of the internal spec.templateGeneration).
const TemplateGenerationAnnotation = "deprecated.daemonset.template.generation"

type daemonSet = appsv1.DaemonSet

// podSpecWarnings are the pod template's warnings.
var podSpecWarnings = base.PodSpecWarnings("spec.template.spec", func(ds *daemonSet) *corev1.PodSpec { return &ds.Spec.Template.Spec })

// Kind describes daemonsets.
var Kind = base.Kind[*daemonSet]{
	APIVersion: "apps/v1", Namespaced: true,
	Status:               true,
	SpecGeneration:       true,
	PrepareCreate:        func(_ context.Context, ds *daemonSet) { setTemplateGeneration(ds, 1) },
	PrepareUpdate:        countTemplateChange,
	Validate:             validation.ValidateDaemonSet,
	ValidateUpdate:       validation.ValidateDaemonSetUpdate,
	ValidateStatusUpdate: validation.ValidateDaemonSetStatusUpdate,
	Warnings:             podSpecWarnings,
	UpdateWarnings:       base.WhenChanged(func(ds *daemonSet) any { return ds.Spec.Template }, podSpecWarnings),
	Table:                table,
}

// countTemplateChange bumps the template generation when the template changed.
func countTemplateChange(n, o *daemonSet) {
	gen := templateGeneration(o)
	if !apiequality.Semantic.DeepEqual(n.Spec.Template, o.Spec.Template) {
		gen++
	}
	setTemplateGeneration(n, gen)
}

func templateGeneration(ds *daemonSet) int64 {
	n, err := strconv.ParseInt(ds.Annotations[TemplateGenerationAnnotation], 10, 64)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func setTemplateGeneration(ds *daemonSet, n int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[TemplateGenerationAnnotation] = strconv.FormatInt(n, 10)
}

// table prints daemon sets as kubectl get daemonsets does.
var table = base.Table[*daemonSet]{
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
	Row: func(ds *daemonSet, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		s := ds.Status
		names, images := base.ContainerCells(ds.Spec.Template.Spec.Containers)
		return []interface{}{ds.Name, int64(s.DesiredNumberScheduled), int64(s.CurrentNumberScheduled), int64(s.NumberReady),
			int64(s.UpdatedNumberScheduled), int64(s.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
			base.Age(ds.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(ds.Spec.Selector)}, nil
	},
}
