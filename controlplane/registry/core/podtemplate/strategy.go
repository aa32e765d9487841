// Package podtemplate describes core/v1 PodTemplates to the registry
// (metadata.generation counts template changes) and their table (NAME
// CONTAINERS IMAGES POD LABELS).
package podtemplate

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes podtemplates.
var Kind = base.Kind[*v1.PodTemplate]{
	Namespaced:     true,
	Generation:     func(t *v1.PodTemplate) any { return t.Template },
	Validate:       validation.ValidatePodTemplate,
	ValidateUpdate: validation.ValidatePodTemplateUpdate,
	Warnings:       podSpecWarnings,
	UpdateWarnings: base.WhenChanged(base.Generation, podSpecWarnings),
	Table:          table,
}

// podSpecWarnings are the template's pod spec warnings.
var podSpecWarnings = base.PodSpecWarnings("template.spec", func(t *v1.PodTemplate) *v1.PodSpec { return &t.Template.Spec })

// table prints pod templates as kubectl get podtemplates does.
var table = base.Table[*v1.PodTemplate]{
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
