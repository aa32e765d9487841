// Package job is the registry strategy for batch/v1 jobs: the selector and
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
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the jobs strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the jobs strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("batch/v1", "status")
	return s
}

// DefaultGarbageCollectionPolicy orphans a job's pods unless the delete
// asks otherwise, as upstream does for batch/v1 (kubectl asks for
// background propagation).
func (Strategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.OrphanDependents
}

// PrepareForCreate generates the selector and pod labels, clears the
// status and sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	j := obj.(*batchv1.Job)
	if !ptr.Deref(j.Spec.ManualSelector, false) {
		GenerateSelector(j)
	}
	j.Status = batchv1.JobStatus{}
	j.Generation = 1
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

// PrepareForUpdate keeps the status and bumps the generation when the spec
// changed.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*batchv1.Job), old.(*batchv1.Job)
	n.Status = o.Status
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) {
		n.Generation = o.Generation + 1
	}
}

// templateSpecPath is where a job's pod spec sits.
var templateSpecPath = field.NewPath("spec", "template", "spec")

// WarningsOnCreate warns about a name that is not a DNS label (pod names
// and hostnames derive from it) and about the pod template.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	j := obj.(*batchv1.Job)
	var warnings []string
	if msgs := utilvalidation.IsDNS1123Label(j.Name); len(msgs) != 0 {
		warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(warnings, validation.WarningsForPodSpec(&j.Spec.Template.Spec, templateSpecPath)...)
}

// WarningsOnUpdate returns the pod template's warnings when the spec changed.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	j, o := obj.(*batchv1.Job), old.(*batchv1.Job)
	if j.Generation == o.Generation {
		return nil
	}
	return validation.WarningsForPodSpec(&j.Spec.Template.Spec, templateSpecPath)
}

// Validate validates a new job.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateJob(obj.(*batchv1.Job), validation.JobOptionsFor(nil))
}

// ValidateUpdate validates a job update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	o := old.(*batchv1.Job)
	return validation.ValidateJobUpdate(obj.(*batchv1.Job), o, validation.JobOptionsFor(o))
}

// StatusStrategy is the jobs/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the jobs/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("batch/v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*batchv1.Job).Spec = old.(*batchv1.Job).Spec
}

// WarningsOnUpdate returns no warnings.
func (StatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateJobStatusUpdate(obj.(*batchv1.Job), old.(*batchv1.Job))
}

// GetAttrs returns a job's labels and its selectable fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Job(o.(*batchv1.Job)) })

// Predicate matches jobs against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints jobs as kubectl get jobs does.
var Table = base.Table[*batchv1.Job]{
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
	Row: func(j *batchv1.Job, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
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
