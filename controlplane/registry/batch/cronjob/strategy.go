// Package cronjob is the registry strategy for batch/v1 cron jobs: status
// cleared on create and kept apart, generation bumped on spec changes,
// upstream's validation (standard cron schedules, time zones, the job
// template), and the table (NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST
// SCHEDULE AGE, wide: CONTAINERS IMAGES SELECTOR).
package cronjob

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the cronjobs strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the cronjobs strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("batch/v1", "status")
	return s
}

// PrepareForCreate clears the status and sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	cj := obj.(*batchv1.CronJob)
	cj.Status = batchv1.CronJobStatus{}
	cj.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation when the spec
// changed.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*batchv1.CronJob), old.(*batchv1.CronJob)
	n.Status = o.Status
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) {
		n.Generation = o.Generation + 1
	}
}

// templateSpecPath is where a cron job's pod spec sits.
var templateSpecPath = field.NewPath("spec", "jobTemplate", "spec", "template", "spec")

// WarningsOnCreate warns about a name that is not a DNS label and about
// the pod template.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	cj := obj.(*batchv1.CronJob)
	var warnings []string
	if msgs := utilvalidation.IsDNS1123Label(cj.Name); len(msgs) != 0 {
		warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(warnings, validation.WarningsForPodSpec(&cj.Spec.JobTemplate.Spec.Template.Spec, templateSpecPath)...)
}

// WarningsOnUpdate returns the pod template's warnings when the spec
// changed, and warns about TZ in the schedule.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	cj, o := obj.(*batchv1.CronJob), old.(*batchv1.CronJob)
	var warnings []string
	if cj.Generation != o.Generation {
		warnings = validation.WarningsForPodSpec(&cj.Spec.JobTemplate.Spec.Template.Spec, templateSpecPath)
	}
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		warnings = append(warnings, "cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")
	}
	return warnings
}

// Validate validates a new cron job.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateCronJob(obj.(*batchv1.CronJob))
}

// ValidateUpdate validates a cron job update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateCronJobUpdate(obj.(*batchv1.CronJob), old.(*batchv1.CronJob))
}

// StatusStrategy is the cronjobs/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the cronjobs/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("batch/v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*batchv1.CronJob).Spec = old.(*batchv1.CronJob).Spec
}

// ValidateUpdate accepts any status, as upstream.
func (StatusStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}

// WarningsOnUpdate returns no warnings.
func (StatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetAttrs returns a cron job's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches cron jobs against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints cron jobs as kubectl get cronjobs does.
var Table = base.Table[*batchv1.CronJob]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Schedule", batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]),
		base.Col("Timezone", batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]),
		{Name: "Suspend", Type: "boolean", Description: batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]},
		base.IntCol("Active", batchv1.CronJobStatus{}.SwaggerDoc()["active"]),
		base.Col("Last Schedule", batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]),
		base.AgeColumn,
		base.Wide(base.Col("Containers", "Names of each container in the template.")),
		base.Wide(base.Col("Images", "Images referenced by each container in the template.")),
		base.Wide(base.Col("Selector", batchv1.JobSpec{}.SwaggerDoc()["selector"])),
	},
	Row: func(cj *batchv1.CronJob, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		last := "<none>"
		if cj.Status.LastScheduleTime != nil {
			last = base.Age(*cj.Status.LastScheduleTime, now)
		}
		tz := "<none>"
		if cj.Spec.TimeZone != nil {
			tz = *cj.Spec.TimeZone
		}
		suspend := "<unset>"
		switch {
		case cj.Spec.Suspend == nil:
		case *cj.Spec.Suspend:
			suspend = "True"
		default:
			suspend = "False"
		}
		names, images := base.ContainerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
		return []interface{}{cj.Name, cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last,
			base.Age(cj.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector)}, nil
	},
}
