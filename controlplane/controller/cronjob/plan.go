// Package cronjob is berth's CronJob controller: it creates a Job from a
// CronJob's template at each time of its schedule (standard cron, @every
// and @hourly-style descriptors, in spec.timeZone or TZ= when given), as
// upstream's controller does: concurrencyPolicy Allow, Forbid or Replace,
// startingDeadlineSeconds, successful and failed jobs history limits,
// suspend, and status.active, lastScheduleTime and lastSuccessfulTime.
//
// Compute is the pure decision (cron job, its jobs, which active jobs are
// known to be gone, now → Plan); Controller executes it: delete jobs,
// create the job, write the status, requeue at the next schedule time.
package cronjob

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"berth/controlplane/controller/job"
)

// nextScheduleDelta is added to requeues so the sync lands after the
// scheduled time, as upstream.
const nextScheduleDelta = 100 * time.Millisecond

// tooManyMissed is upstream's threshold for the TooManyMissedTimes warning.
const tooManyMissed = 100

var cronJobKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Input is what one sync of a cron job sees.
type Input struct {
	// CronJob is the cron job (not modified).
	CronJob *batchv1.CronJob
	// Jobs are the jobs it controls.
	Jobs []*batchv1.Job
	// Gone are the UIDs of status.active jobs confirmed deleted.
	Gone map[types.UID]bool
	// Now is the time of the sync.
	Now time.Time
}

// Event is an Event recorded on the cron job.
type Event struct {
	Type, Reason, Message string
}

// Plan is what a sync does.
type Plan struct {
	// Delete are jobs to delete (background propagation): finished jobs
	// beyond the history limits, and active ones a Replace supersedes.
	Delete []*batchv1.Job
	// Create is the job to create for the schedule time reached, or nil.
	Create *batchv1.Job
	// Scheduled is the schedule time Create is for.
	Scheduled time.Time
	// Status is the new status, without Create (the executor adds it to
	// active and sets lastScheduleTime once it exists).
	Status batchv1.CronJobStatus
	// RequeueAfter is when to look again (0: only on changes).
	RequeueAfter time.Duration
	// Events to record.
	Events []Event
}

// Compute decides one sync.
func Compute(in Input) Plan {
	cj := in.CronJob
	st := *cj.Status.DeepCopy()
	plan := Plan{}
	event := func(t, reason, format string, args ...any) {
		plan.Events = append(plan.Events, Event{t, reason, fmt.Sprintf(format, args...)})
	}
	children := map[types.UID]bool{}
	var successful, failed []*batchv1.Job
	for _, j := range in.Jobs {
		children[j.UID] = true
		active := slices.ContainsFunc(st.Active, func(r corev1.ObjectReference) bool { return r.UID == j.UID })
		ct := finishedCondition(j)
		switch {
		case ct == "" && !active:
			event(corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case ct != "":
			if active {
				st.Active = removeRef(st.Active, j.UID)
				event(corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, ct)
			}
			if ct == batchv1.JobComplete {
				successful = append(successful, j)
				if ct := j.Status.CompletionTime; ct != nil && (st.LastSuccessfulTime == nil || ct.After(st.LastSuccessfulTime.Time)) {
					st.LastSuccessfulTime = ct.DeepCopy()
				}
			} else {
				failed = append(failed, j)
			}
		}
	}
	for _, r := range slices.Clone(st.Active) {
		if !children[r.UID] && in.Gone[r.UID] {
			event(corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", r.Name)
			st.Active = removeRef(st.Active, r.UID)
		}
	}
	for _, old := range append(oldest(successful, cj.Spec.SuccessfulJobsHistoryLimit), oldest(failed, cj.Spec.FailedJobsHistoryLimit)...) {
		plan.Delete = append(plan.Delete, old)
		st.Active = removeRef(st.Active, old.UID)
	}
	plan.Status = st
	if cj.DeletionTimestamp != nil || ptr.Deref(cj.Spec.Suspend, false) {
		return plan
	}
	if tz := cj.Spec.TimeZone; tz != nil {
		if _, err := time.LoadLocation(*tz); err != nil {
			event(corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *tz, err)
			return plan
		}
	}
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		event(corev1.EventTypeWarning, "UnsupportedSchedule", "CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule)
	}
	sched, err := cron.ParseStandard(Schedule(cj))
	if err != nil {
		event(corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return plan
	}
	scheduled, missed, err := mostRecent(cj, in.Now, sched, true)
	if err != nil {
		event(corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
		return plan
	}
	plan.RequeueAfter = nextAfter(cj, in.Now, sched)
	if scheduled == nil {
		return plan
	}
	if missed > tooManyMissed {
		event(corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(in.Now) {
		event(corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return plan
	}
	name := JobName(cj, *scheduled)
	if slices.ContainsFunc(st.Active, func(r corev1.ObjectReference) bool { return r.Name == name }) ||
		(st.LastScheduleTime != nil && st.LastScheduleTime.Time.Equal(*scheduled)) {
		return plan
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(st.Active) > 0 {
			event(corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return plan
		}
	case batchv1.ReplaceConcurrent:
		for _, r := range st.Active {
			for _, j := range in.Jobs {
				if j.UID == r.UID {
					plan.Delete = append(plan.Delete, j)
				}
			}
		}
		st.Active = nil
		plan.Status = st
	}
	plan.Create, plan.Scheduled = JobFromTemplate(cj, *scheduled), *scheduled
	// The requeue counts from the new lastScheduleTime.
	next := cj.DeepCopy()
	next.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	plan.RequeueAfter = nextAfter(next, in.Now, sched)
	return plan
}

// Schedule is the schedule robfig/cron parses: spec.schedule, prefixed with
// TZ=spec.timeZone when a known time zone is set and the schedule has none.
func Schedule(cj *batchv1.CronJob) string {
	if strings.Contains(cj.Spec.Schedule, "TZ") || cj.Spec.TimeZone == nil {
		return cj.Spec.Schedule
	}
	if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
		return cj.Spec.Schedule
	}
	return fmt.Sprintf("TZ=%s %s", *cj.Spec.TimeZone, cj.Spec.Schedule)
}

// mostRecent returns the latest schedule time not after now and after the
// last schedule time (or creation; with the starting deadline, no earlier
// than now minus it), and how many were missed.
func mostRecent(cj *batchv1.CronJob, now time.Time, sched cron.Schedule, withDeadline bool) (*time.Time, int64, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; withDeadline && d != nil {
		if dl := now.Add(-time.Duration(*d) * time.Second); dl.After(earliest) {
			earliest = dl
		}
	}
	t1 := sched.Next(earliest)
	t2 := sched.Next(t1)
	if now.Before(t1) {
		return nil, 0, nil
	}
	if now.Before(t2) {
		return &t1, 0, nil
	}
	between := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if between < 1 {
		return nil, 0, fmt.Errorf("time difference between two schedules is less than 1 second")
	}
	missed := int64(now.Sub(t1).Seconds())/between + 1
	var latest time.Time
	for t := sched.Next(t1.Add(time.Duration((missed-2)*between) * time.Second)); !t.After(now); t = sched.Next(t) {
		latest = t
	}
	if latest.IsZero() {
		return nil, missed, nil
	}
	return &latest, missed, nil
}

// nextAfter is how long until the schedule time after the most recent one
// (plus nextScheduleDelta).
func nextAfter(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) time.Duration {
	base := now
	recent, missed, err := mostRecent(cj, now, sched, false)
	switch {
	case err != nil:
	case recent != nil:
		base = *recent
	case missed == 0:
		base = cj.CreationTimestamp.Time
		if cj.Status.LastScheduleTime != nil {
			base = cj.Status.LastScheduleTime.Time
		}
	}
	return sched.Next(base).Add(nextScheduleDelta).Sub(now)
}

// JobName is the name of the job for a schedule time: NAME-<minutes since
// the epoch>.
func JobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}

// JobFromTemplate is the job cj creates for a schedule time: the template's
// labels, annotations (plus batch.kubernetes.io/cronjob-scheduled-timestamp
// in the cron job's time zone) and spec, cj as its controller.
func JobFromTemplate(cj *batchv1.CronJob, scheduled time.Time) *batchv1.Job {
	labels := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	loc := time.UTC
	if tz := cj.Spec.TimeZone; tz != nil {
		if l, err := time.LoadLocation(*tz); err == nil {
			loc = l
		}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: JobName(cj, scheduled), Namespace: cj.Namespace, Labels: labels, Annotations: annotations,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, cronJobKind)}}}
	cj.Spec.JobTemplate.Spec.DeepCopyInto(&j.Spec)
	return j
}

// oldest returns the jobs beyond limit, oldest start first.
func oldest(jobs []*batchv1.Job, limit *int32) []*batchv1.Job {
	if limit == nil || len(jobs) <= int(*limit) {
		return nil
	}
	jobs = slices.Clone(jobs)
	slices.SortFunc(jobs, func(a, b *batchv1.Job) int {
		switch {
		case a.Status.StartTime == nil && b.Status.StartTime != nil:
			return 1
		case a.Status.StartTime != nil && b.Status.StartTime == nil:
			return -1
		case a.Status.StartTime == nil || a.Status.StartTime.Equal(b.Status.StartTime):
			return strings.Compare(a.Name, b.Name)
		}
		return a.Status.StartTime.Compare(b.Status.StartTime.Time)
	})
	return jobs[:len(jobs)-int(*limit)]
}

func finishedCondition(j *batchv1.Job) batchv1.JobConditionType {
	if !job.IsFinished(j) {
		return ""
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

func removeRef(refs []corev1.ObjectReference, uid types.UID) []corev1.ObjectReference {
	return slices.DeleteFunc(slices.Clone(refs), func(r corev1.ObjectReference) bool { return r.UID == uid })
}

// statusChanged reports whether a plan's status differs from the stored one.
func statusChanged(cj *batchv1.CronJob, st *batchv1.CronJobStatus) bool {
	return !equality.Semantic.DeepEqual(&cj.Status, st)
}
