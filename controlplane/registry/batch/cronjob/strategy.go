// Package cronjob describes batch/v1 cron jobs to the registry: status
// cleared on create and kept apart, generation bumped on spec changes,
// upstream's validation (standard cron schedules, time zones, the job
// template), and the table (NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST
// SCHEDULE AGE, wide: CONTAINERS IMAGES SELECTOR).
package cronjob

import (
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type cronJob = batchv1.CronJob

// podSpecWarnings are the pod template's warnings.
var podSpecWarnings = base.PodSpecWarnings("spec.jobTemplate.spec.template.spec", func(cj *cronJob) *v1.PodSpec {
	return &cj.Spec.JobTemplate.Spec.Template.Spec
})

// Kind describes cronjobs; /status accepts any status, as upstream.
var Kind = base.Kind[*cronJob]{
	APIVersion: "batch/v1", Namespaced: true,
	Status:               true,
	SpecGeneration:       true,
	Validate:             validation.ValidateCronJob,
	ValidateUpdate:       validation.ValidateCronJobUpdate,
	ValidateStatusUpdate: func(_, _ *cronJob) field.ErrorList { return nil },
	Warnings:             base.WithPodNameWarning(podSpecWarnings),
	UpdateWarnings:       updateWarnings,
	Table:                table,
}

// updateWarnings are the pod template's warnings when the spec changed,
// and one about TZ in the schedule.
func updateWarnings(cj, old *cronJob) []string {
	warnings := base.WhenChanged(base.Generation, podSpecWarnings)(cj, old)
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		warnings = append(warnings, "cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")
	}
	return warnings
}

// table prints cron jobs as kubectl get cronjobs does.
var table = base.Table[*cronJob]{
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
	Row: func(cj *cronJob, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
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
