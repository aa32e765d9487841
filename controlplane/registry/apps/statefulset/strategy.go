// Package statefulset describes apps/v1 stateful sets to the registry:
// status cleared on create and kept apart, metadata.generation bumped on
// spec changes, rollingUpdate.maxUnavailable dropped unless already in use
// (upstream's MaxUnavailableStatefulSet gate is off by default), upstream's
// validation (only replicas, ordinals, template, updateStrategy,
// revisionHistoryLimit, persistentVolumeClaimRetentionPolicy and
// minReadySeconds may change), and the table (NAME READY AGE, wide:
// CONTAINERS IMAGES).
package statefulset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type statefulSet = appsv1.StatefulSet

// Kind describes statefulsets.
var Kind = base.Kind[*statefulSet]{
	APIVersion: "apps/v1", Namespaced: true,
	Status:               true,
	SpecGeneration:       true,
	PrepareCreate:        func(_ context.Context, ss *statefulSet) { dropMaxUnavailable(ss, nil) },
	PrepareUpdate:        dropMaxUnavailable,
	Validate:             validation.ValidateStatefulSet,
	ValidateUpdate:       validation.ValidateStatefulSetUpdate,
	ValidateStatusUpdate: validation.ValidateStatefulSetStatusUpdate,
	Warnings:             func(ss *statefulSet) []string { return warnings(ss, true) },
	UpdateWarnings:       func(n, o *statefulSet) []string { return warnings(n, n.Generation != o.Generation) },
	Table:                table,
}

// dropMaxUnavailable clears rollingUpdate.maxUnavailable unless old used
// it: the field is behind upstream's alpha MaxUnavailableStatefulSet gate.
func dropMaxUnavailable(n, o *statefulSet) {
	if o != nil && o.Spec.UpdateStrategy.RollingUpdate != nil && o.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable != nil {
		return
	}
	if ru := n.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		ru.MaxUnavailable = nil
	}
}

var templatePath = field.NewPath("spec", "template")

// warnings are the pod template's and the negative revisionHistoryLimit's.
func warnings(ss *statefulSet, withTemplate bool) []string {
	var w []string
	if withTemplate {
		w = validation.WarningsForPodSpec(&ss.Spec.Template.Spec, templatePath.Child("spec"))
	}
	if l := ss.Spec.RevisionHistoryLimit; l != nil && *l < 0 {
		w = append(w, "spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended")
	}
	return w
}

// table prints stateful sets as kubectl get statefulsets does.
var table = base.Table[*statefulSet]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Ready", "Number of the pod with ready state"),
		base.AgeColumn,
		base.Wide(base.Col("Containers", "Names of each container in the template.")),
		base.Wide(base.Col("Images", "Images referenced by each container in the template.")),
	},
	Row: func(ss *statefulSet, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		desired := int32(0)
		if ss.Spec.Replicas != nil {
			desired = *ss.Spec.Replicas
		}
		names, images := base.ContainerCells(ss.Spec.Template.Spec.Containers)
		return []interface{}{ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, desired), base.Age(ss.CreationTimestamp, now), names, images}, nil
	},
}
