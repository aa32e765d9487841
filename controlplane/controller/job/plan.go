// Package job is berth's Job controller: it runs a batch/v1 Job's pods to
// completion with upstream's semantics (completions and parallelism,
// NonIndexed and Indexed completion, backoffLimit with exponential
// back-off, activeDeadlineSeconds, podFailurePolicy, successPolicy,
// suspend and resume) and tracks finished pods with the
// batch.kubernetes.io/job-tracking finalizer and
// status.uncountedTerminatedPods, so that no pod is counted twice or lost
// when pods are deleted or the controller restarts.
//
// Compute is the pure decision: (job, its pods, what the controller already
// did, the back-off record, now) → Plan. Controller executes a plan in this
// order: delete pods, create pods, write the interim status (pods about to
// lose their finalizer recorded as uncounted), remove the finalizers, write
// the final status.
package job

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"berth/controlplane/controller"
	"berth/controlplane/controller/replicaset"
)

// Upstream's limits and back-off.
const (
	// MaxPodCreateDeletePerSync caps the pods created or deleted in one sync.
	MaxPodCreateDeletePerSync = 500
	// DefaultPodFailureBackOff is the delay after the first failure; it
	// doubles with each further failure since the last success.
	DefaultPodFailureBackOff = 10 * time.Second
	// MaxPodFailureBackOff caps the delay.
	MaxPodFailureBackOff = 10 * time.Minute
)

// Condition reasons and messages upstream's controller writes.
const (
	msgBackoffLimit     = "Job has reached the specified backoff limit"
	msgDeadline         = "Job was active longer than specified deadline"
	msgCompletions      = "Reached expected number of succeeded pods"
	msgMaxFailedIndexes = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes    = "Job has failed indexes"
	reasonSuspended     = "JobSuspended"
	msgSuspended        = "Job suspended"
	reasonResumed       = "JobResumed"
	msgResumed          = "Job resumed"
	completionIndexEnv  = "JOB_COMPLETION_INDEX"
)

// Backoff is what the controller remembers of a job's recent failures:
// how many pods failed since the last success and when the last did.
type Backoff struct {
	FailuresAfterLastSuccess int32
	LastFailureTime          *time.Time
}

// remaining is how long pod creation must still wait after the failures.
func (b Backoff) remaining(now time.Time) time.Duration {
	if b.FailuresAfterLastSuccess == 0 || b.LastFailureTime == nil {
		return 0
	}
	d := DefaultPodFailureBackOff
	for i := int32(1); i < b.FailuresAfterLastSuccess; i++ {
		d *= 2
		if d >= MaxPodFailureBackOff {
			d = MaxPodFailureBackOff
			break
		}
	}
	if elapsed := now.Sub(*b.LastFailureTime); elapsed < d {
		return d - elapsed
	}
	return 0
}

// Input is what one sync of a job sees.
type Input struct {
	// Job is the job (not modified).
	Job *batchv1.Job
	// Pods are the pods the job controls, in any phase.
	Pods []*corev1.Pod
	// FinalizersRemoved are pods whose tracking finalizer this controller
	// removed although the cache may still show it.
	FinalizersRemoved sets.Set[types.UID]
	// ExpectationsSatisfied is false while pod creations or deletions the
	// controller issued are not yet in the cache.
	ExpectationsSatisfied bool
	// Backoff is the job's back-off record.
	Backoff Backoff
	// Now is the time of the sync.
	Now time.Time
}

// Event is an Event the executor records on the job.
type Event struct {
	Type, Reason, Message string
}

// NewPod is one pod to create: its completion index (noIndex for a
// NonIndexed job) and, with backoffLimitPerIndex, the failure counts of
// its index so far (the job-index-failure-count and
// job-index-ignored-failure-count annotations).
type NewPod struct {
	Index                      int
	FailureCount, IgnoredCount *int32
}

// Plan is what a sync does.
type Plan struct {
	// Delete are active pods to delete (their finalizer removed first).
	Delete []*corev1.Pod
	// Create are the pods to create.
	Create []NewPod
	// Interim is the status to write before RemoveFinalizers (the pods
	// about to lose their finalizer listed as uncounted); nil when none.
	Interim *batchv1.JobStatus
	// RemoveFinalizers are finished pods whose tracking finalizer goes.
	RemoveFinalizers []*corev1.Pod
	// Status is the job's status after all of the above.
	Status batchv1.JobStatus
	// Backoff is the back-off record to keep once Interim (or Status) is written.
	Backoff Backoff
	// RequeueAfter asks for another sync after this long (0: none).
	RequeueAfter time.Duration
	// Events are recorded once Status is written.
	Events []Event
}

// Compute decides one sync of a job that is not finished.
func Compute(in Input) Plan {
	job := in.Job
	st := *job.Status.DeepCopy()
	if st.UncountedTerminatedPods == nil {
		st.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	uncSucc, uncFail := sets.New(st.UncountedTerminatedPods.Succeeded...), sets.New(st.UncountedTerminatedPods.Failed...)
	indexed := isIndexed(job)
	completions := int(ptr.Deref(job.Spec.Completions, 0))
	suspended := ptr.Deref(job.Spec.Suspend, false)
	tracked := func(p *corev1.Pod) bool { return hasFinalizer(p) && !in.FinalizersRemoved.Has(p.UID) }
	validIndex := func(p *corev1.Pod) bool {
		ix := completionIndex(p)
		return !indexed || (ix != noIndex && ix < completions)
	}
	plan := Plan{}

	var active, terminating []*corev1.Pod
	for _, p := range in.Pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.DeletionTimestamp == nil {
			active = append(active, p)
		} else {
			terminating = append(terminating, p)
		}
	}
	ready := countReady(active)

	var newSucc, newFail []*corev1.Pod
	for _, p := range in.Pods {
		if !tracked(p) || !validIndex(p) {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded && !uncSucc.Has(p.UID) {
			newSucc = append(newSucc, p)
		} else if isPodFailed(p, job) && !uncFail.Has(p.UID) {
			newFail = append(newFail, p)
		}
	}
	succeeded := st.Succeeded + int32(len(newSucc)+uncSucc.Len())
	failed := st.Failed + int32(countedFailures(job, newFail)+uncFail.Len())
	if st.StartTime == nil && !suspended {
		st.StartTime = ptr.To(metav1.NewTime(in.Now))
	}
	plan.Backoff = nextBackoff(in.Backoff, newSucc, newFail)

	// The condition the job is heading to, if any.
	var finished *batchv1.JobCondition
	if c := findCondition(st.Conditions, batchv1.JobSuccessCriteriaMet); c != nil && c.Status == corev1.ConditionTrue {
		finished = c
	}
	if finished == nil {
		if c := findCondition(st.Conditions, batchv1.JobFailureTarget); c != nil && c.Status == corev1.ConditionTrue {
			finished = newCondition(batchv1.JobFailed, c.Reason, c.Message, in.Now)
		} else if msg := failJobMessage(job, in.Pods); msg != "" {
			finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, msg, in.Now)
		}
	}
	if finished == nil {
		switch {
		case failed > ptr.Deref(job.Spec.BackoffLimit, 6) || pastBackoffLimitOnFailure(job, in.Pods):
			finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimit, in.Now)
		case pastActiveDeadline(job, st.StartTime, in.Now):
			finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, msgDeadline, in.Now)
		case job.Spec.ActiveDeadlineSeconds != nil && !suspended:
			plan.RequeueAfter = time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - in.Now.Sub(st.StartTime.Time)
		}
	}
	var prevIdx, succeededIdx, failedIdx sets.Set[int]
	var delayed map[int]*corev1.Pod
	if indexed {
		prevIdx = parseIndexes(st.CompletedIndexes, completions)
		succeededIdx = prevIdx.Clone()
		for _, p := range in.Pods {
			if p.Status.Phase == corev1.PodSucceeded && validIndex(p) && hasFinalizer(p) {
				succeededIdx.Insert(completionIndex(p))
			}
		}
		succeeded = int32(succeededIdx.Len())
		if perIndex(job) {
			failedIdx = parseIndexes(ptr.Deref(st.FailedIndexes, ""), completions)
			for _, p := range in.Pods {
				if validIndex(p) && hasFinalizer(p) && isIndexFailed(job, p) {
					failedIdx.Insert(completionIndex(p))
				}
			}
			if finished == nil {
				if limit := job.Spec.MaxFailedIndexes; limit != nil && failedIdx.Len() > int(*limit) {
					finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes, in.Now)
				} else if failedIdx.Len() > 0 && failedIdx.Len()+succeededIdx.Len() >= completions {
					finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, msgFailedIndexes, in.Now)
				}
			}
			delayed = delayedDeletion(job, in.Pods, tracked, validIndex, succeededIdx, failedIdx, indexesOf(active))
		}
		if finished == nil {
			if msg, ok := matchSuccessPolicy(job.Spec.SuccessPolicy, completions, succeededIdx); ok {
				finished = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, msg, in.Now)
			}
		}
	}

	nActive, nTerminating := int32(len(active)), int32(len(terminating))
	removeActive := func(pods []*corev1.Pod) {
		plan.Delete = pods
		nActive -= int32(len(pods))
		nTerminating += int32(len(pods))
		ready -= countReady(pods)
	}
	if finished != nil {
		removeActive(active)
		if !in.ExpectationsSatisfied {
			finished = nil
		}
	} else {
		manage := in.ExpectationsSatisfied && job.DeletionTimestamp == nil
		if manage {
			if suspended {
				removeActive(active)
			} else {
				plan.Create, plan.RequeueAfter = manageCounts(job, active, terminating, succeeded, succeededIdx, failedIdx, delayed, plan.Backoff, in.Now, plan.RequeueAfter, removeActive)
				nActive += int32(len(plan.Create))
			}
		}
		var complete bool
		if job.Spec.Completions == nil {
			complete = succeeded > 0 && nActive == 0
		} else {
			complete = succeeded >= *job.Spec.Completions && nActive == 0
		}
		switch {
		case complete:
			finished = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, msgCompletions, in.Now)
		case manage && suspended:
			var changed bool
			if st.Conditions, changed = ensureCondition(st.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, reasonSuspended, msgSuspended, in.Now); changed {
				plan.Events = append(plan.Events, Event{corev1.EventTypeNormal, "Suspended", msgSuspended})
			}
		case manage:
			var changed bool
			if st.Conditions, changed = ensureCondition(st.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, reasonResumed, msgResumed, in.Now); changed {
				plan.Events = append(plan.Events, Event{corev1.EventTypeNormal, "Resumed", msgResumed})
				st.StartTime = ptr.To(metav1.NewTime(in.Now))
			}
		}
	}
	st.Active, st.Ready, st.Terminating = nActive, &ready, &nTerminating

	// Finished pods: record them as uncounted, then let their finalizer go.
	withFinalizer := sets.New[types.UID]()
	for _, p := range in.Pods {
		if tracked(p) {
			withFinalizer.Insert(p.UID)
		}
	}
	countUncounted(&st, withFinalizer)
	unc := st.UncountedTerminatedPods
	pods := slices.Clone(in.Pods)
	if indexed {
		slices.SortStableFunc(pods, func(a, b *corev1.Pod) int { return completionIndex(a) - completionIndex(b) })
	}
	for _, p := range pods {
		if !tracked(p) {
			continue
		}
		podFailed := isPodFailed(p, job)
		if job.DeletionTimestamp == nil && finished == nil && p.Status.Phase != corev1.PodSucceeded &&
			(!podFailed || delayed[completionIndex(p)] == p) {
			continue // running, or a failed pod its index's replacement still needs
		}
		plan.RemoveFinalizers = append(plan.RemoveFinalizers, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !uncFail.Has(p.UID):
			if !indexed && !uncSucc.Has(p.UID) {
				unc.Succeeded = append(unc.Succeeded, p.UID)
			}
		case podFailed || (finished != nil && finished.Type != batchv1.JobSuccessCriteriaMet):
			if !uncFail.Has(p.UID) && validIndex(p) {
				if _, count := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); count {
					unc.Failed = append(unc.Failed, p.UID)
				}
			}
		}
	}
	if indexed {
		st.Succeeded = int32(succeededIdx.Len())
		st.CompletedIndexes = formatIndexes(succeededIdx)
		if perIndex(job) {
			st.FailedIndexes = ptr.To(formatIndexes(failedIdx))
		}
	}
	if finished != nil && finished.Type == batchv1.JobFailureTarget {
		st.Conditions = append(st.Conditions, *finished)
		finished = newCondition(batchv1.JobFailed, finished.Reason, finished.Message, in.Now)
	}
	if finished != nil && finished.Type == batchv1.JobSuccessCriteriaMet {
		if c := findCondition(st.Conditions, batchv1.JobSuccessCriteriaMet); c == nil || c.Status != corev1.ConditionTrue {
			st.Conditions = append(st.Conditions, *finished)
		}
		finished = newCondition(batchv1.JobComplete, finished.Reason, finished.Message, in.Now)
	}
	if len(plan.RemoveFinalizers) > 0 && !equality.Semantic.DeepEqual(&st, &job.Status) {
		plan.Interim = st.DeepCopy()
	}

	// Once the finalizers are gone, the uncounted pods are counted.
	for _, p := range plan.RemoveFinalizers {
		withFinalizer.Delete(p.UID)
	}
	countUncounted(&st, withFinalizer)
	if finished != nil && len(unc.Succeeded)+len(unc.Failed) == 0 && nTerminating == 0 {
		st.Conditions, _ = ensureCondition(st.Conditions, finished.Type, corev1.ConditionTrue, finished.Reason, finished.Message, in.Now)
		if finished.Type == batchv1.JobComplete {
			st.CompletionTime = ptr.To(metav1.NewTime(in.Now))
			if job.Spec.Completions != nil && st.Succeeded > *job.Spec.Completions {
				plan.Events = append(plan.Events, Event{corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached"})
			}
			plan.Events = append(plan.Events, Event{corev1.EventTypeNormal, "Completed", "Job completed"})
		} else {
			plan.Events = append(plan.Events, Event{corev1.EventTypeWarning, finished.Reason, finished.Message})
		}
	}
	plan.Status = st
	return plan
}

// manageCounts decides the pods to delete (through remove) or create to
// bring the active pods to what parallelism, completions and the
// successes so far want; creations wait out the failure back-off.
func manageCounts(job *batchv1.Job, active, terminating []*corev1.Pod, succeeded int32, succeededIdx, failedIdx sets.Set[int],
	delayed map[int]*corev1.Pod, backoff Backoff, now time.Time, requeue time.Duration, remove func([]*corev1.Pod)) ([]NewPod, time.Duration) {
	parallelism := ptr.Deref(job.Spec.Parallelism, 1)
	nActive := int32(len(active))
	var want int32
	if job.Spec.Completions == nil {
		want = parallelism
		if succeeded > 0 {
			want = nActive
		}
	} else {
		want = max(0, min(*job.Spec.Completions-succeeded, parallelism))
	}
	if rm := activeForRemoval(job, active, succeededIdx, int(max(0, nActive-want)), now); len(rm) > 0 {
		remove(rm[:min(len(rm), MaxPodCreateDeletePerSync)])
		return nil, requeue
	}
	var nTerminating int32
	if onlyReplaceFailed(job) {
		nTerminating = int32(len(terminating))
	}
	diff := int(min(want-nTerminating-nActive, MaxPodCreateDeletePerSync))
	if diff <= 0 {
		return nil, requeue
	}
	later := func(wait time.Duration) {
		if requeue == 0 || wait < requeue {
			requeue = wait
		}
	}
	if wait := backoff.remaining(now); wait > 0 && !perIndex(job) {
		later(wait)
		return nil, requeue
	}
	if !isIndexed(job) {
		return slices.Repeat([]NewPod{{Index: noIndex}}, diff), requeue
	}
	taken := []sets.Set[int]{succeededIdx, indexesOf(active)}
	if onlyReplaceFailed(job) {
		taken = append(taken, indexesOf(terminating))
	}
	if failedIdx != nil {
		taken = append(taken, failedIdx)
	}
	var out []NewPod
	for _, ix := range firstPending(diff, int(*job.Spec.Completions), taken...) {
		if !perIndex(job) {
			out = append(out, NewPod{Index: ix})
			continue
		}
		// Each index backs off on its own failures.
		failures, ignored := indexFailureCounts(job, delayed[ix])
		if last := delayed[ix]; last != nil {
			t := finishTime(last)
			if wait := (Backoff{FailuresAfterLastSuccess: failures + ignored, LastFailureTime: &t}).remaining(now); wait > 0 {
				later(wait)
				continue
			}
		}
		out = append(out, NewPod{Index: ix, FailureCount: ptr.To(failures), IgnoredCount: &ignored})
	}
	return out, requeue
}

// perIndex reports whether the job counts failures per index.
func perIndex(job *batchv1.Job) bool {
	return isIndexed(job) && job.Spec.BackoffLimitPerIndex != nil
}

// isIndexFailed reports whether failed pod p fails its index: a FailIndex
// rule matched, or its index's counted failures reached
// backoffLimitPerIndex.
func isIndexFailed(job *batchv1.Job, p *corev1.Pod) bool {
	if !isPodFailed(p, job) {
		return false
	}
	if action := matchedAction(job.Spec.PodFailurePolicy, p); action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	if _, count := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); !count {
		return false
	}
	return annotationCount(p, batchv1.JobIndexFailureCountAnnotation) >= *job.Spec.BackoffLimitPerIndex
}

// delayedDeletion returns, per index that is neither done, failed nor
// running, its latest failed pod: that pod keeps its finalizer until its
// replacement (which inherits its failure counts) exists.
func delayedDeletion(job *batchv1.Job, pods []*corev1.Pod, tracked, validIndex func(*corev1.Pod) bool,
	succeeded, failed, active sets.Set[int]) map[int]*corev1.Pod {
	out := map[int]*corev1.Pod{}
	abs := func(p *corev1.Pod) int32 {
		return annotationCount(p, batchv1.JobIndexFailureCountAnnotation) + annotationCount(p, batchv1.JobIndexIgnoredFailureCountAnnotation)
	}
	for _, p := range pods {
		ix := completionIndex(p)
		if !tracked(p) || !validIndex(p) || !isPodFailed(p, job) || succeeded.Has(ix) || failed.Has(ix) || active.Has(ix) {
			continue
		}
		if last, ok := out[ix]; !ok || (abs(last) <= abs(p) && !finishTime(p).Before(finishTime(last))) {
			out[ix] = p
		}
	}
	return out
}

// indexFailureCounts are the failure counts the replacement of failed pod
// last carries (0, 0 without one).
func indexFailureCounts(job *batchv1.Job, last *corev1.Pod) (failures, ignored int32) {
	if last == nil {
		return 0, 0
	}
	failures = annotationCount(last, batchv1.JobIndexFailureCountAnnotation)
	ignored = annotationCount(last, batchv1.JobIndexIgnoredFailureCountAnnotation)
	if _, count := matchPodFailurePolicy(job.Spec.PodFailurePolicy, last); count {
		failures++
	} else {
		ignored++
	}
	return failures, ignored
}

func annotationCount(p *corev1.Pod, key string) int32 {
	v, err := strconv.Atoi(p.Annotations[key])
	if err != nil || v < 0 || v > math.MaxInt32 {
		return 0
	}
	return int32(v)
}

// activeForRemoval picks at least n active pods to delete: for an Indexed
// job first those with no valid index, of an index that already succeeded,
// and the duplicates of an index, then the least valuable (the
// ReplicaSet's deletion order).
func activeForRemoval(job *batchv1.Job, active []*corev1.Pod, succeededIdx sets.Set[int], n int, now time.Time) []*corev1.Pod {
	var rm []*corev1.Pod
	left := active
	if isIndexed(job) {
		left = nil
		best := map[int]*corev1.Pod{}
		completions := int(*job.Spec.Completions)
		for _, p := range replicaset.RankForDeletion(active, active, now) {
			ix := completionIndex(p)
			if ix == noIndex || ix >= completions || succeededIdx.Has(ix) {
				rm = append(rm, p)
				continue
			}
			if prev, ok := best[ix]; ok {
				rm = append(rm, prev) // the earlier one ranks lower
			}
			best[ix] = p
		}
		for _, p := range active {
			if best[completionIndex(p)] == p {
				left = append(left, p)
			}
		}
	}
	if len(rm) < n {
		rm = append(rm, replicaset.RankForDeletion(left, left, now)[:n-len(rm)]...)
	}
	return rm
}

// countUncounted moves the uncounted pods that no longer hold the
// finalizer into the succeeded and failed counters.
func countUncounted(st *batchv1.JobStatus, withFinalizer sets.Set[types.UID]) {
	u := st.UncountedTerminatedPods
	keep := func(uids []types.UID) []types.UID {
		var out []types.UID
		for _, uid := range uids {
			if withFinalizer.Has(uid) {
				out = append(out, uid)
			}
		}
		return out
	}
	s, f := keep(u.Succeeded), keep(u.Failed)
	st.Succeeded += int32(len(u.Succeeded) - len(s))
	st.Failed += int32(len(u.Failed) - len(f))
	u.Succeeded, u.Failed = s, f
}

// nextBackoff updates the back-off record with newly finished pods: a
// success resets it, later failures count again.
func nextBackoff(b Backoff, succeeded, failed []*corev1.Pod) Backoff {
	byFinish := func(a, b *corev1.Pod) int { return finishTime(a).Compare(finishTime(b)) }
	succeeded, failed = slices.Clone(succeeded), slices.Clone(failed)
	slices.SortFunc(succeeded, byFinish)
	slices.SortFunc(failed, byFinish)
	if len(succeeded) == 0 {
		if len(failed) == 0 {
			return b
		}
		last := finishTime(failed[len(failed)-1])
		return Backoff{FailuresAfterLastSuccess: b.FailuresAfterLastSuccess + int32(len(failed)), LastFailureTime: &last}
	}
	out := Backoff{}
	lastSuccess := finishTime(succeeded[len(succeeded)-1])
	for i := len(failed) - 1; i >= 0; i-- {
		t := finishTime(failed[i])
		if !t.After(lastSuccess) {
			break
		}
		if out.LastFailureTime == nil {
			out.LastFailureTime = &t
		}
		out.FailuresAfterLastSuccess++
	}
	return out
}

// finishTime is when a pod finished: its containers' latest finish, else
// its Ready=False transition, else its deletion, else its creation.
func finishTime(p *corev1.Pod) time.Time {
	var latest *time.Time
	complete := len(p.Status.ContainerStatuses) > 0
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			complete = false
			break
		}
		if latest == nil || latest.Before(t.FinishedAt.Time) {
			latest = &t.FinishedAt.Time
		}
	}
	if complete && latest != nil {
		return *latest
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		return p.DeletionTimestamp.Add(-time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// pastBackoffLimitOnFailure reports whether the container restarts of the
// running pods of a restartPolicy OnFailure job reached backoffLimit.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			restarts += cs.RestartCount
		}
	}
	limit := ptr.Deref(job.Spec.BackoffLimit, 6)
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

func pastActiveDeadline(job *batchv1.Job, start *metav1.Time, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || start == nil || ptr.Deref(job.Spec.Suspend, false) {
		return false
	}
	return now.Sub(start.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

// failJobMessage is the message of the first failed pod a FailJob rule
// of the pod failure policy matches ("" when none).
func failJobMessage(job *batchv1.Job, pods []*corev1.Pod) string {
	if job.Spec.PodFailurePolicy == nil {
		return ""
	}
	for _, p := range pods {
		if isPodFailed(p, job) {
			if msg, _ := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// countedFailures is how many of failed count towards backoffLimit.
func countedFailures(job *batchv1.Job, failed []*corev1.Pod) int {
	n := 0
	for _, p := range failed {
		if _, count := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); count {
			n++
		}
	}
	return n
}

// isPodFailed reports whether p counts as failed: phase Failed, or, unless
// only failed pods are replaced, being deleted before it succeeded.
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailed(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// onlyReplaceFailed: podReplacementPolicy Failed (implied by a pod failure
// policy) waits for terminating pods to fail before replacing them.
func onlyReplaceFailed(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.PodReplacementPolicy, "") == batchv1.Failed || job.Spec.PodFailurePolicy != nil
}

func isIndexed(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
}

func hasFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

func countReady(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if controller.PodReady(p) {
			n++
		}
	}
	return n
}

func indexesOf(pods []*corev1.Pod) sets.Set[int] {
	out := sets.New[int]()
	for _, p := range pods {
		if ix := completionIndex(p); ix != noIndex {
			out.Insert(ix)
		}
	}
	return out
}

func findCondition(list []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

func newCondition(t batchv1.JobConditionType, reason, message string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
}

// ensureCondition sets condition t to status, reason and message; a
// missing condition is added only when status is not False.
func ensureCondition(list []batchv1.JobCondition, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) ([]batchv1.JobCondition, bool) {
	if c := findCondition(list, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == message {
			return list, false
		}
		*c = *newCondition(t, reason, message, now)
		c.Status = status
		return list, true
	}
	if status == corev1.ConditionFalse {
		return list, false
	}
	c := newCondition(t, reason, message, now)
	c.Status = status
	return append(list, *c), true
}

// IsFinished reports whether the job has a true Complete or Failed condition.
func IsFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// FinishTime is when the job finished (its terminal condition's
// transition), or nil while it runs.
func FinishTime(job *batchv1.Job) *time.Time {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			t := c.LastTransitionTime.Time
			return &t
		}
	}
	return nil
}

// podName formats the generateName of an Indexed job's pod: NAME-INDEX-,
// the name cut so that the whole stays within a generated name's limit.
func podGenerateName(jobName string, ix int) string {
	if ix == noIndex {
		return jobName + "-"
	}
	suffix := fmt.Sprintf("-%d-", ix)
	const maxGenerated = 63 - 5
	if len(jobName)+len(suffix) > maxGenerated {
		jobName = jobName[:maxGenerated-len(suffix)]
	}
	return jobName + suffix
}
