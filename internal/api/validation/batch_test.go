package validation

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/api/defaults"
)

// validJob returns a defaulted job with the generated selector and labels.
func validJob() *batchv1.Job {
	labels := map[string]string{batchv1.ControllerUidLabel: "u1", LegacyControllerUIDLabel: "u1", batchv1.JobNameLabel: "pi", LegacyJobNameLabel: "pi"}
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "u1"},
		Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "u1"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
				Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}}}}}
	defaults.Job(j)
	return j
}

func TestValidateJob(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(j *batchv1.Job)
		want   string
	}{
		{"valid", func(*batchv1.Job) {}, ""},
		{"restartPolicy Always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyAlways },
			`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		{"negative backoffLimit", func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr[int32](-1) },
			"spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"},
		{"indexed without completions", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
			j.Spec.Completions = nil
		}, "spec.completions: Required value: when completion mode is Indexed"},
		{"backoffLimitPerIndex on NonIndexed", func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr[int32](1) },
			"spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"},
		{"missing generated label", func(j *batchv1.Job) { delete(j.Spec.Template.Labels, batchv1.JobNameLabel) },
			"spec.template.metadata.labels[batch.kubernetes.io/job-name]: Required value: must be 'pi'"},
		{"selector not generated", func(j *batchv1.Job) { j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = "other" },
			"spec.selector: Invalid value"},
		{"pod failure policy with OnFailure", func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
		}, `spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`},
		{"exit codes unordered and 0 for In", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{2, 0}}}}}
		}, "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator"},
		{"FailIndex without backoffLimitPerIndex", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailIndex,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}}}}}
		}, `spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`},
		{"successPolicy on NonIndexed", func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr[int32](1)}}}
		}, "spec.successPolicy: Invalid value"},
		{"succeededIndexes malformed", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr[int32](3)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr("2,1")}}}
		}, `spec.successPolicy.rules[0].succeededIndexes: Invalid value: "2,1": error parsing succeededIndexes: non-increasing order, previous: 2, current: 1`},
		{"indexed hostname too long", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr[int32](10)
			j.Name = strings.Repeat("a", 62)
			j.Spec.Template.Labels[batchv1.JobNameLabel] = j.Name
			j.Spec.Template.Labels[LegacyJobNameLabel] = j.Name
		}, "will not able to create pod with invalid DNS label: " + strings.Repeat("a", 62) + "-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := validJob()
			tc.change(j)
			errs := ValidateJob(j, JobOptionsFor(nil))
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestValidateCronJob(t *testing.T) {
	valid := func() *batchv1.CronJob {
		cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "default"}, Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: v1.PodTemplateSpec{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyOnFailure,
				Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}}}}}}}
		defaults.CronJob(cj)
		return cj
	}
	for _, tc := range []struct {
		name   string
		change func(cj *batchv1.CronJob)
		want   string
	}{
		{"valid", func(*batchv1.CronJob) {}, ""},
		{"@every", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@every 1h30m" }, ""},
		{"time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Etc/UTC") }, ""},
		{"bad schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "* * *" },
			`spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]`},
		{"TZ in schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 * * * *" },
			"cannot use TZ or CRON_TZ in schedule, use timeZone field instead"},
		{"unknown time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Mars/Olympus") }, "spec.timeZone: Invalid value"},
		{"Local time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Local") },
			"timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"},
		{"concurrencyPolicy", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" },
			`spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"`},
		{"name too long", func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("a", 53) }, "metadata.name: Invalid value"},
		{"selector in template", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{} },
			"spec.jobTemplate.spec.selector: Invalid value: {}: `selector` will be auto-generated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := valid()
			tc.change(cj)
			errs := ValidateCronJob(cj)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}
