package defaults

import (
	"math"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Job applies the batch/v1 job defaults as upstream: completions and
// parallelism 1 when both are unset (else parallelism 1), backoffLimit 6
// (MaxInt32 with backoffLimitPerIndex), the job's labels from the template
// when it has none, completionMode NonIndexed, suspend and manualSelector
// false, podReplacementPolicy Failed with a podFailurePolicy (else
// TerminatingOrFailed), pod-condition patterns' status True, and the pod
// template defaults.
func Job(j *batchv1.Job) {
	spec := &j.Spec
	if len(j.Labels) == 0 && spec.Template.Labels != nil {
		j.Labels = spec.Template.Labels
	}
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = ptr.To[int32](math.MaxInt32)
		} else {
			spec.BackoffLimit = ptr.To[int32](6)
		}
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.PodReplacementPolicy == nil {
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = ptr.To(false)
	}
	jobTemplateDefaults(spec)
}

// jobTemplateDefaults applies the defaults a CronJob's job template gets
// too: pod-condition patterns' status True and the pod template defaults.
func jobTemplateDefaults(spec *batchv1.JobSpec) {
	if spec.PodFailurePolicy != nil {
		for i := range spec.PodFailurePolicy.Rules {
			for k := range spec.PodFailurePolicy.Rules[i].OnPodConditions {
				if p := &spec.PodFailurePolicy.Rules[i].OnPodConditions[k]; p.Status == "" {
					p.Status = v1.ConditionTrue
				}
			}
		}
	}
	PodTemplateSpec(&spec.Template)
}

// CronJob applies the batch/v1 cron job defaults: concurrencyPolicy Allow,
// suspend false, history limits 3 successful and 1 failed, and the job
// template's pod defaults (the job spec itself is defaulted when a Job is
// made from it, as upstream).
func CronJob(cj *batchv1.CronJob) {
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	jobTemplateDefaults(&spec.JobTemplate.Spec)
}
