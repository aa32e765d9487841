package job

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testJob(mod ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "job-uid"},
		Spec: batchv1.JobSpec{Completions: ptr.To[int32](1), Parallelism: ptr.To[int32](1), BackoffLimit: ptr.To[int32](6),
			CompletionMode: ptr.To(batchv1.NonIndexedCompletion), Suspend: ptr.To(false), PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: t0}}}
	for _, m := range mod {
		m(j)
	}
	return j
}

// pod builds a tracked pod: phase, optional completion index (-1 none).
func pod(name string, phase corev1.PodPhase, ix int, mod ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
		Finalizers: []string{batchv1.JobTrackingFinalizer}, CreationTimestamp: metav1.Time{Time: t0}}, Status: corev1.PodStatus{Phase: phase}}
	if ix != noIndex {
		p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(ix)}
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

func exitCode(code int32, at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.Time{Time: at}}}}}
	}
}

func cond(st batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	c := findCondition(st.Conditions, t)
	if c == nil || c.Status != corev1.ConditionTrue {
		return nil
	}
	return c
}

func TestCompute(t *testing.T) {
	now := t0.Add(time.Minute)
	for _, tc := range []struct {
		name  string
		job   *batchv1.Job
		pods  []*corev1.Pod
		in    func(*Input)
		check func(t *testing.T, p Plan)
	}{
		{name: "new job creates parallelism pods and starts", job: testJob(func(j *batchv1.Job) {
			j.Status.StartTime = nil
			j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](5), ptr.To[int32](2)
		}), check: func(t *testing.T, p Plan) {
			if len(p.Create) != 2 || p.Create[0].Index != noIndex || p.Status.Active != 2 || p.Status.StartTime == nil {
				t.Errorf("create %v active %d start %v", p.Create, p.Status.Active, p.Status.StartTime)
			}
		}},
		{name: "completions bound parallelism", job: testJob(func(j *batchv1.Job) {
			j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](5)
			j.Status.Succeeded = 1
		}), check: func(t *testing.T, p Plan) {
			if len(p.Create) != 2 {
				t.Errorf("create %v, want 2", p.Create)
			}
		}},
		{name: "succeeded pod is recorded uncounted, then counted; job completes", job: testJob(),
			pods: []*corev1.Pod{pod("a", corev1.PodSucceeded, noIndex)},
			check: func(t *testing.T, p Plan) {
				if p.Interim == nil || len(p.Interim.UncountedTerminatedPods.Succeeded) != 1 || p.Interim.Succeeded != 0 {
					t.Fatalf("interim %+v", p.Interim)
				}
				if cond(*p.Interim, batchv1.JobSuccessCriteriaMet) == nil || cond(*p.Interim, batchv1.JobComplete) != nil {
					t.Errorf("interim conditions %+v", p.Interim.Conditions)
				}
				if len(p.RemoveFinalizers) != 1 || p.Status.Succeeded != 1 || len(p.Status.UncountedTerminatedPods.Succeeded) != 0 {
					t.Errorf("final %+v remove %d", p.Status, len(p.RemoveFinalizers))
				}
				c := cond(p.Status, batchv1.JobComplete)
				if c == nil || c.Reason != batchv1.JobReasonCompletionsReached || c.Message != "Reached expected number of succeeded pods" || p.Status.CompletionTime == nil {
					t.Errorf("Complete condition %+v completionTime %v", c, p.Status.CompletionTime)
				}
				if len(p.Events) != 1 || p.Events[0].Reason != "Completed" {
					t.Errorf("events %+v", p.Events)
				}
			}},
		{name: "uncounted pod whose finalizer is gone is counted once", job: testJob(func(j *batchv1.Job) {
			j.Spec.Completions = ptr.To[int32](2)
			j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a"}}
		}), pods: []*corev1.Pod{pod("a", corev1.PodSucceeded, noIndex), pod("b", corev1.PodRunning, noIndex)},
			in: func(in *Input) { in.FinalizersRemoved = sets.New[types.UID]("a") },
			check: func(t *testing.T, p Plan) {
				if p.Status.Succeeded != 1 || len(p.Status.UncountedTerminatedPods.Succeeded) != 0 || len(p.RemoveFinalizers) != 0 || len(p.Create) != 0 {
					t.Errorf("status %+v remove %d create %v", p.Status, len(p.RemoveFinalizers), p.Create)
				}
			}},
		{name: "failure replaced after back-off", job: testJob(), pods: []*corev1.Pod{pod("a", corev1.PodFailed, noIndex, exitCode(1, now.Add(-5*time.Second)))},
			check: func(t *testing.T, p Plan) {
				if len(p.Create) != 0 || p.RequeueAfter != 5*time.Second || p.Status.Failed != 1 || p.Backoff.FailuresAfterLastSuccess != 1 {
					t.Errorf("create %v requeue %v failed %d backoff %+v", p.Create, p.RequeueAfter, p.Status.Failed, p.Backoff)
				}
			}},
		{name: "back-off doubles per failure", job: testJob(func(j *batchv1.Job) { j.Status.Failed = 2 }),
			in: func(in *Input) {
				in.Backoff = Backoff{FailuresAfterLastSuccess: 2, LastFailureTime: ptr.To(now.Add(-15 * time.Second))}
			},
			check: func(t *testing.T, p Plan) {
				if len(p.Create) != 0 || p.RequeueAfter != 5*time.Second {
					t.Errorf("create %v requeue %v, want none and 5s (20s back-off)", p.Create, p.RequeueAfter)
				}
			}},
		{name: "backoffLimit exceeded fails the job", job: testJob(func(j *batchv1.Job) {
			j.Spec.BackoffLimit = ptr.To[int32](1)
			j.Status.Failed = 1
		}), pods: []*corev1.Pod{pod("a", corev1.PodFailed, noIndex), pod("b", corev1.PodRunning, noIndex)},
			check: func(t *testing.T, p Plan) {
				if len(p.Delete) != 1 || p.Delete[0].Name != "b" {
					t.Fatalf("delete %v", p.Delete)
				}
				if c := cond(p.Status, batchv1.JobFailureTarget); c == nil || c.Reason != batchv1.JobReasonBackoffLimitExceeded || c.Message != "Job has reached the specified backoff limit" {
					t.Errorf("FailureTarget %+v", c)
				}
				// b is terminating: Failed waits for it.
				if cond(p.Status, batchv1.JobFailed) != nil || *p.Status.Terminating != 1 || p.Status.Active != 0 {
					t.Errorf("status %+v", p.Status)
				}
				if p.Status.Failed != 3 {
					t.Errorf("failed %d, want 3 (the deleted active pod counts)", p.Status.Failed)
				}
			}},
		{name: "FailureTarget becomes Failed once nothing terminates", job: testJob(func(j *batchv1.Job) {
			j.Status.Failed = 7
			j.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimit, t0)}
		}), check: func(t *testing.T, p Plan) {
			c := cond(p.Status, batchv1.JobFailed)
			if c == nil || c.Reason != batchv1.JobReasonBackoffLimitExceeded || p.Status.CompletionTime != nil {
				t.Errorf("Failed %+v completionTime %v", c, p.Status.CompletionTime)
			}
			if len(p.Events) != 1 || p.Events[0].Type != corev1.EventTypeWarning || p.Events[0].Reason != batchv1.JobReasonBackoffLimitExceeded {
				t.Errorf("events %+v", p.Events)
			}
		}},
		{name: "activeDeadlineSeconds passed", job: testJob(func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) }),
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, noIndex)},
			check: func(t *testing.T, p Plan) {
				if c := cond(p.Status, batchv1.JobFailureTarget); c == nil || c.Reason != batchv1.JobReasonDeadlineExceeded || c.Message != "Job was active longer than specified deadline" {
					t.Errorf("FailureTarget %+v", c)
				}
				if len(p.Delete) != 1 {
					t.Errorf("delete %v", p.Delete)
				}
			}},
		{name: "activeDeadlineSeconds pending requeues", job: testJob(func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](90) }),
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, noIndex)},
			check: func(t *testing.T, p Plan) {
				if p.RequeueAfter != 30*time.Second {
					t.Errorf("requeue %v", p.RequeueAfter)
				}
			}},
		{name: "pod failure policy FailJob", job: testJob(func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}}}}
		}), pods: []*corev1.Pod{pod("a", corev1.PodFailed, noIndex, exitCode(42, now))},
			check: func(t *testing.T, p Plan) {
				c := cond(p.Status, batchv1.JobFailed)
				want := "Container c for pod default/a failed with exit code 42 matching FailJob rule at index 0"
				if c == nil || c.Reason != batchv1.JobReasonPodFailurePolicy || c.Message != want {
					t.Errorf("Failed %+v", c)
				}
			}},
		{name: "pod failure policy Ignore for DisruptionTarget", job: testJob(func(j *batchv1.Job) {
			j.Spec.BackoffLimit = ptr.To[int32](0)
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}
		}), pods: []*corev1.Pod{pod("a", corev1.PodFailed, noIndex, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
		})},
			check: func(t *testing.T, p Plan) {
				if p.Status.Failed != 0 || cond(p.Status, batchv1.JobFailureTarget) != nil || len(p.Create) != 1 || len(p.RemoveFinalizers) != 1 {
					t.Errorf("failed %d create %v remove %d conditions %+v", p.Status.Failed, p.Create, len(p.RemoveFinalizers), p.Status.Conditions)
				}
			}},
		{name: "Failed replacement policy waits for terminating pods", job: testJob(func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }),
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, noIndex, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} })},
			check: func(t *testing.T, p Plan) {
				if len(p.Create) != 0 || *p.Status.Terminating != 1 || p.Status.Failed != 0 {
					t.Errorf("create %v terminating %d failed %d", p.Create, *p.Status.Terminating, p.Status.Failed)
				}
			}},
		{name: "TerminatingOrFailed replaces a terminating pod and counts it failed", job: testJob(),
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, noIndex, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} })},
			check: func(t *testing.T, p Plan) {
				if p.Status.Failed != 1 || len(p.RemoveFinalizers) != 1 {
					t.Errorf("failed %d remove %d", p.Status.Failed, len(p.RemoveFinalizers))
				}
			}},
		{name: "indexed job creates the pending indexes", job: testJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](5), ptr.To[int32](3)
			j.Status.CompletedIndexes = "0"
			j.Status.Succeeded = 1
		}), pods: []*corev1.Pod{pod("p2", corev1.PodRunning, 2)},
			check: func(t *testing.T, p Plan) {
				if indexes(p.Create) != "[1 3]" {
					t.Errorf("create %v, want [1 3]", p.Create)
				}
			}},
		{name: "indexed successes become completedIndexes", job: testJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](4)
		}), pods: []*corev1.Pod{pod("p0", corev1.PodSucceeded, 0), pod("p1", corev1.PodSucceeded, 1), pod("p3", corev1.PodSucceeded, 3), pod("p2", corev1.PodRunning, 2),
			pod("p1b", corev1.PodRunning, 1)},
			check: func(t *testing.T, p Plan) {
				if p.Status.CompletedIndexes != "0-1,3" || p.Status.Succeeded != 3 {
					t.Errorf("completedIndexes %q succeeded %d", p.Status.CompletedIndexes, p.Status.Succeeded)
				}
				if len(p.Delete) != 1 || p.Delete[0].Name != "p1b" {
					t.Errorf("delete %v, want the duplicate of succeeded index 1", p.Delete)
				}
			}},
		{name: "success policy", job: testJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
		}), pods: []*corev1.Pod{pod("p0", corev1.PodSucceeded, 0), pod("p1", corev1.PodRunning, 1), pod("p2", corev1.PodRunning, 2)},
			check: func(t *testing.T, p Plan) {
				c := cond(p.Status, batchv1.JobSuccessCriteriaMet)
				if c == nil || c.Reason != batchv1.JobReasonSuccessPolicy || c.Message != "Matched rules at index 0" || len(p.Delete) != 2 {
					t.Errorf("SuccessCriteriaMet %+v delete %d", c, len(p.Delete))
				}
				if cond(p.Status, batchv1.JobComplete) != nil {
					t.Error("Complete before the other pods terminated")
				}
			}},
		{name: "suspend deletes active pods and sets Suspended", job: testJob(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }),
			pods: []*corev1.Pod{pod("a", corev1.PodRunning, noIndex)},
			check: func(t *testing.T, p Plan) {
				c := cond(p.Status, batchv1.JobSuspended)
				if len(p.Delete) != 1 || c == nil || c.Reason != "JobSuspended" || c.Message != "Job suspended" {
					t.Errorf("delete %v Suspended %+v", p.Delete, c)
				}
			}},
		{name: "resume sets Suspended False and restarts the clock", job: testJob(func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue, Reason: "JobSuspended", Message: "Job suspended"}}
		}), check: func(t *testing.T, p Plan) {
			c := findCondition(p.Status.Conditions, batchv1.JobSuspended)
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != "JobResumed" || !p.Status.StartTime.Time.Equal(now) || len(p.Create) != 1 {
				t.Errorf("Suspended %+v start %v create %v", c, p.Status.StartTime, p.Create)
			}
		}},
		{name: "unsatisfied expectations create nothing", job: testJob(), in: func(in *Input) { in.ExpectationsSatisfied = false },
			check: func(t *testing.T, p Plan) {
				if len(p.Create) != 0 {
					t.Errorf("create %v", p.Create)
				}
			}},
		{name: "work queue job completes when a pod succeeded and none is active", job: testJob(func(j *batchv1.Job) {
			j.Spec.Completions, j.Spec.Parallelism = nil, ptr.To[int32](2)
		}), pods: []*corev1.Pod{pod("a", corev1.PodSucceeded, noIndex), pod("b", corev1.PodSucceeded, noIndex)},
			check: func(t *testing.T, p Plan) {
				if cond(p.Status, batchv1.JobComplete) == nil || p.Status.Succeeded != 2 || len(p.Create) != 0 {
					t.Errorf("status %+v create %v", p.Status, p.Create)
				}
			}},
		{name: "OnFailure restarts count against backoffLimit", job: testJob(func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.BackoffLimit = ptr.To[int32](2)
		}), pods: []*corev1.Pod{pod("a", corev1.PodRunning, noIndex, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 2}}
		})}, check: func(t *testing.T, p Plan) {
			if c := cond(p.Status, batchv1.JobFailureTarget); c == nil || c.Reason != batchv1.JobReasonBackoffLimitExceeded {
				t.Errorf("FailureTarget %+v", c)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Job: tc.job, Pods: tc.pods, ExpectationsSatisfied: true, Now: now}
			if tc.in != nil {
				tc.in(&in)
			}
			before := tc.job.DeepCopy()
			p := Compute(in)
			tc.check(t, p)
			if before.Status.Active != tc.job.Status.Active || len(before.Status.Conditions) != len(tc.job.Status.Conditions) {
				t.Error("Compute modified the job")
			}
		})
	}
}

func indexes(pods []NewPod) string {
	var ix []int
	for _, p := range pods {
		ix = append(ix, p.Index)
	}
	return fmt.Sprint(ix)
}

func perIndexJob(mod ...func(*batchv1.Job)) *batchv1.Job {
	return testJob(append([]func(*batchv1.Job){func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
		j.Spec.BackoffLimit = ptr.To[int32](1 << 30)
	}}, mod...)...)
}

func failureCount(n string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations[batchv1.JobIndexFailureCountAnnotation] = n }
}

func TestComputeBackoffLimitPerIndex(t *testing.T) {
	now := t0.Add(time.Minute)
	for _, tc := range []struct {
		name  string
		job   *batchv1.Job
		pods  []*corev1.Pod
		check func(t *testing.T, p Plan)
	}{
		{name: "first failure of an index is retried with its count, keeping the failed pod's finalizer until then",
			job: perIndexJob(), pods: []*corev1.Pod{pod("p0", corev1.PodFailed, 0, failureCount("0"), exitCode(1, now.Add(-time.Minute))),
				pod("p1", corev1.PodRunning, 1, failureCount("0")), pod("p2", corev1.PodRunning, 2, failureCount("0"))},
			check: func(t *testing.T, p Plan) {
				if len(p.Create) != 1 || p.Create[0].Index != 0 || *p.Create[0].FailureCount != 1 {
					t.Fatalf("create %+v", p.Create)
				}
				if len(p.RemoveFinalizers) != 0 || ptr.Deref(p.Status.FailedIndexes, "x") != "" {
					t.Errorf("remove %d failedIndexes %v", len(p.RemoveFinalizers), p.Status.FailedIndexes)
				}
			}},
		{name: "an index failing backoffLimitPerIndex+1 times is failed; the others go on",
			job: perIndexJob(), pods: []*corev1.Pod{pod("p0", corev1.PodFailed, 0, failureCount("1")), pod("p1", corev1.PodRunning, 1), pod("p2", corev1.PodSucceeded, 2)},
			check: func(t *testing.T, p Plan) {
				if ptr.Deref(p.Status.FailedIndexes, "") != "0" || p.Status.CompletedIndexes != "2" || len(p.Create) != 0 || len(p.Delete) != 0 {
					t.Errorf("failedIndexes %v completed %q create %v delete %v", p.Status.FailedIndexes, p.Status.CompletedIndexes, p.Create, p.Delete)
				}
				if cond(p.Status, batchv1.JobFailureTarget) != nil {
					t.Error("failed while index 1 runs")
				}
			}},
		{name: "failed and succeeded indexes cover completions: FailedIndexes",
			job: perIndexJob(), pods: []*corev1.Pod{pod("p0", corev1.PodFailed, 0, failureCount("1")), pod("p1", corev1.PodSucceeded, 1), pod("p2", corev1.PodSucceeded, 2)},
			check: func(t *testing.T, p Plan) {
				c := cond(p.Status, batchv1.JobFailed)
				if c == nil || c.Reason != batchv1.JobReasonFailedIndexes || c.Message != "Job has failed indexes" {
					t.Errorf("Failed %+v", c)
				}
			}},
		{name: "maxFailedIndexes exceeded", job: perIndexJob(func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr.To[int32](0) }),
			pods: []*corev1.Pod{pod("p0", corev1.PodFailed, 0, failureCount("1")), pod("p1", corev1.PodRunning, 1), pod("p2", corev1.PodRunning, 2)},
			check: func(t *testing.T, p Plan) {
				c := cond(p.Status, batchv1.JobFailureTarget)
				if c == nil || c.Reason != batchv1.JobReasonMaxFailedIndexesExceeded || len(p.Delete) != 2 {
					t.Errorf("FailureTarget %+v delete %d", c, len(p.Delete))
				}
			}},
		{name: "FailIndex rule fails the index at once", job: perIndexJob(func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailIndex,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}}}}
		}), pods: []*corev1.Pod{pod("p0", corev1.PodFailed, 0, failureCount("0"), exitCode(42, now)), pod("p1", corev1.PodRunning, 1), pod("p2", corev1.PodRunning, 2)},
			check: func(t *testing.T, p Plan) {
				if ptr.Deref(p.Status.FailedIndexes, "") != "0" || len(p.Create) != 0 || p.Status.Failed != 1 {
					t.Errorf("failedIndexes %v create %v failed %d", p.Status.FailedIndexes, p.Create, p.Status.Failed)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, Compute(Input{Job: tc.job, Pods: tc.pods, ExpectationsSatisfied: true, Now: now}))
		})
	}
}

func TestIndexesRoundTrip(t *testing.T) {
	s := parseIndexes("0-2,5,7-8,x,20", 10)
	if got := formatIndexes(s); got != "0-2,5,7-8" {
		t.Errorf("format = %q", got)
	}
	if got := fmt.Sprint(firstPending(3, 10, s)); got != "[3 4 6]" {
		t.Errorf("firstPending = %s", got)
	}
}

func TestPodFromTemplateIndexed(t *testing.T) {
	j := testJob(func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c"}}
	})
	p := PodFromTemplate(j, NewPod{Index: 3})
	if p.GenerateName != "pi-3-" || p.Spec.Hostname != "pi-3" || p.Annotations[batchv1.JobCompletionIndexAnnotation] != "3" ||
		p.Labels[batchv1.JobCompletionIndexAnnotation] != "3" || !hasFinalizer(p) {
		t.Errorf("pod %+v", p.ObjectMeta)
	}
	if e := p.Spec.Containers[0].Env; len(e) != 1 || e[0].Name != "JOB_COMPLETION_INDEX" {
		t.Errorf("env %+v", e)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "Job" || ref.UID != "job-uid" {
		t.Errorf("controller %+v", ref)
	}
	if j.Spec.Template.Spec.Containers[0].Env != nil {
		t.Error("template modified")
	}
}
