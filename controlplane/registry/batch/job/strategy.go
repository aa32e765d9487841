// Package job describes batch/v1 jobs to the registry: the selector and
// the pod labels generated on create (unless manualSelector), status
// cleared on create and kept apart, generation bumped on spec changes, the
// template immutable (but for the scheduling directives of a suspended job
// that never started), upstream's status checks on /status, dependents
// orphaned by default on batch/v1 deletes, and the table (NAME STATUS
// COMPLETIONS DURATION AGE, wide: CONTAINERS IMAGES SELECTOR).
package job

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

type job = batchv1.Job

// podSpecWarnings are the pod template's warnings.
var podSpecWarnings = base.PodSpecWarnings("spec.template.spec", func(j *job) *v1.PodSpec { return &j.Spec.Template.Spec })

// Kind describes jobs. A delete orphans the pods unless it asks otherwise,
// as upstream does for batch/v1 (kubectl asks for background propagation);
// the selector and pod labels are generated on create unless
// manualSelector.
var Kind = base.Kind[*job]{
	APIVersion: "batch/v1", Namespaced: true,
	Status:         true,
	DefaultGC:      rest.OrphanDependents,
	SpecGeneration: true,
	PrepareCreate: func(_ context.Context, j *job) {
		if !ptr.Deref(j.Spec.ManualSelector, false) {
			GenerateSelector(j)
		}
	},
	Validate: func(j *job) field.ErrorList { return validation.ValidateJob(j, validation.JobOptionsFor(nil)) },
	ValidateUpdate: func(j, old *job) field.ErrorList {
		return validation.ValidateJobUpdate(j, old, validation.JobOptionsFor(old))
	},
	ValidateStatusUpdate: validation.ValidateJobStatusUpdate,
	Warnings:             base.WithPodNameWarning(podSpecWarnings),
	UpdateWarnings:       base.WhenChanged(base.Generation, podSpecWarnings),
	Fields:               fieldsets.Job,
	Table:                table,
}

// GenerateSelector adds the job-name and controller-uid labels (legacy and
// batch.kubernetes.io/ ones) to the pod template where missing, and selects
// on batch.kubernetes.io/controller-uid.
func GenerateSelector(j *batchv1.Job) {
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for _, kv := range [][2]string{{validation.LegacyJobNameLabel, j.Name}, {batchv1.JobNameLabel, j.Name},
		{validation.LegacyControllerUIDLabel, string(j.UID)}, {batchv1.ControllerUidLabel, string(j.UID)}} {
		if _, ok := j.Spec.Template.Labels[kv[0]]; !ok {
			j.Spec.Template.Labels[kv[0]] = kv[1]
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

// table prints jobs as kubectl get jobs does.
var table = base.Table[*job]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Status", "Status of the job."),
		base.Col("Completions", batchv1.JobStatus{}.SwaggerDoc()["succeeded"]),
		base.Col("Duration", "Time required to complete the job."),
		base.AgeColumn,
		base.Wide(base.Col("Containers", "Names of each container in the template.")),
		base.Wide(base.Col("Images", "Images referenced by each container in the template.")),
		base.Wide(base.Col("Selector", batchv1.JobSpec{}.SwaggerDoc()["selector"])),
	},
	Row: func(j *job, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		names, images := base.ContainerCells(j.Spec.Template.Spec.Containers)
		return []interface{}{j.Name, Status(j), Completions(j), Duration(j, now), base.Age(j.CreationTimestamp, now),
			names, images, metav1.FormatLabelSelector(j.Spec.Selector)}, nil
	},
}

// Completions is the COMPLETIONS cell: succeeded/completions, or
// succeeded/1 (of parallelism) for a work-queue job.
func Completions(j *batchv1.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	if p := ptr.Deref(j.Spec.Parallelism, 0); p > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, p)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

// Duration is the DURATION cell: from start to completion (or now).
func Duration(j *batchv1.Job, now time.Time) string {
	switch {
	case j.Status.StartTime == nil:
		return ""
	case j.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	default:
		return duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}
}

// Status is the STATUS cell, from the job's true conditions and deletion.
func Status(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == v1.ConditionTrue {
				return true
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}
