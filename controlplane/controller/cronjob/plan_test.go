package cronjob

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// created is the cron jobs' creation time: 10:00:30 UTC.
var created = time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)

func cronJob(mod ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "default", UID: "cj-uid", CreationTimestamp: metav1.Time{Time: created}},
		Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", ConcurrencyPolicy: batchv1.AllowConcurrent, Suspend: ptr.To(false),
			SuccessfulJobsHistoryLimit: ptr.To[int32](3), FailedJobsHistoryLimit: ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "tick"}}}}}
	for _, m := range mod {
		m(cj)
	}
	return cj
}

func childJob(name string, finished batchv1.JobConditionType, start time.Time) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: start}}}
	if finished != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: finished, Status: corev1.ConditionTrue}}
		if finished == batchv1.JobComplete {
			j.Status.CompletionTime = &metav1.Time{Time: start.Add(time.Second)}
		}
	}
	return j
}

func activeRef(name string) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", Namespace: "default", Name: name, UID: types.UID(name)}
}

// TestScheduleDrivenByClock steps the clock through a minute schedule.
func TestScheduleDrivenByClock(t *testing.T) {
	cj := cronJob()
	// 10:00:50: the first time (10:01:00) is not reached.
	p := Compute(Input{CronJob: cj, Now: created.Add(20 * time.Second)})
	if p.Create != nil || p.RequeueAfter != 10*time.Second+nextScheduleDelta {
		t.Fatalf("before the first time: create %v requeue %v", p.Create, p.RequeueAfter)
	}
	// 10:01:00.1: a job for 10:01.
	now := time.Date(2026, 1, 1, 10, 1, 0, 100e6, time.UTC)
	p = Compute(Input{CronJob: cj, Now: now})
	if p.Create == nil || p.Create.Name != "tick-29454361" || !p.Scheduled.Equal(now.Truncate(time.Minute)) {
		t.Fatalf("at 10:01: create %+v scheduled %v", p.Create, p.Scheduled)
	}
	if p.Create.Labels["app"] != "tick" || p.Create.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "2026-01-01T10:01:00Z" ||
		!metav1.IsControlledBy(p.Create, cj) {
		t.Errorf("job meta %+v", p.Create.ObjectMeta)
	}
	if p.RequeueAfter != 60*time.Second {
		t.Errorf("requeue %v, want the next minute", p.RequeueAfter)
	}
	// Recorded: nothing more until 10:02.
	cj.Status.LastScheduleTime = &metav1.Time{Time: p.Scheduled}
	cj.Status.Active = []corev1.ObjectReference{activeRef(p.Create.Name)}
	if p := Compute(Input{CronJob: cj, Jobs: []*batchv1.Job{childJob(p.Create.Name, "", now)}, Now: now.Add(30 * time.Second)}); p.Create != nil {
		t.Errorf("created twice for 10:01")
	}
	// 10:03:10 after missing 10:02: only the most recent time runs.
	p = Compute(Input{CronJob: cj, Jobs: []*batchv1.Job{childJob("tick-29454361", "", now)}, Now: time.Date(2026, 1, 1, 10, 3, 10, 0, time.UTC)})
	if p.Create == nil || p.Create.Name != "tick-29454363" {
		t.Errorf("after a missed time: create %+v", p.Create)
	}
}

func TestCompute(t *testing.T) {
	at := func(h, m, s int) time.Time { return time.Date(2026, 1, 1, h, m, s, 0, time.UTC) }
	for _, tc := range []struct {
		name  string
		cj    *batchv1.CronJob
		jobs  []*batchv1.Job
		gone  map[types.UID]bool
		now   time.Time
		check func(t *testing.T, p Plan)
	}{
		{name: "suspended creates nothing", cj: cronJob(func(c *batchv1.CronJob) { c.Spec.Suspend = ptr.To(true) }), now: at(10, 5, 0),
			check: func(t *testing.T, p Plan) {
				if p.Create != nil || p.RequeueAfter != 0 {
					t.Errorf("create %v requeue %v", p.Create, p.RequeueAfter)
				}
			}},
		{name: "Forbid waits for the active job", cj: cronJob(func(c *batchv1.CronJob) {
			c.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
			c.Status.Active = []corev1.ObjectReference{activeRef("a")}
			c.Status.LastScheduleTime = &metav1.Time{Time: at(10, 1, 0)}
		}), jobs: []*batchv1.Job{childJob("a", "", at(10, 1, 0))}, now: at(10, 2, 0),
			check: func(t *testing.T, p Plan) {
				if p.Create != nil || len(p.Events) != 1 || p.Events[0].Reason != "JobAlreadyActive" {
					t.Errorf("create %v events %+v", p.Create, p.Events)
				}
			}},
		{name: "Replace deletes the active job", cj: cronJob(func(c *batchv1.CronJob) {
			c.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
			c.Status.Active = []corev1.ObjectReference{activeRef("a")}
			c.Status.LastScheduleTime = &metav1.Time{Time: at(10, 1, 0)}
		}), jobs: []*batchv1.Job{childJob("a", "", at(10, 1, 0))}, now: at(10, 2, 0),
			check: func(t *testing.T, p Plan) {
				if p.Create == nil || len(p.Delete) != 1 || p.Delete[0].Name != "a" || len(p.Status.Active) != 0 {
					t.Errorf("create %v delete %v active %v", p.Create, p.Delete, p.Status.Active)
				}
			}},
		{name: "Allow runs concurrently", cj: cronJob(func(c *batchv1.CronJob) {
			c.Status.Active = []corev1.ObjectReference{activeRef("a")}
			c.Status.LastScheduleTime = &metav1.Time{Time: at(10, 1, 0)}
		}), jobs: []*batchv1.Job{childJob("a", "", at(10, 1, 0))}, now: at(10, 2, 0),
			check: func(t *testing.T, p Plan) {
				if p.Create == nil || len(p.Delete) != 0 || len(p.Status.Active) != 1 {
					t.Errorf("create %v delete %v active %v", p.Create, p.Delete, p.Status.Active)
				}
			}},
		{name: "startingDeadlineSeconds passed", cj: cronJob(func(c *batchv1.CronJob) {
			c.Spec.Schedule = "0 * * * *"
			c.Spec.StartingDeadlineSeconds = ptr.To[int64](10)
		}), now: at(11, 0, 30),
			check: func(t *testing.T, p Plan) {
				if p.Create != nil {
					t.Errorf("created %s past its deadline", p.Create.Name)
				}
			}},
		{name: "startingDeadlineSeconds not passed", cj: cronJob(func(c *batchv1.CronJob) {
			c.Spec.Schedule = "@hourly"
			c.Spec.StartingDeadlineSeconds = ptr.To[int64](60)
		}), now: at(11, 0, 30),
			check: func(t *testing.T, p Plan) {
				if p.Create == nil || !p.Scheduled.Equal(at(11, 0, 0)) {
					t.Errorf("create %v at %v", p.Create, p.Scheduled)
				}
			}},
		{name: "@every", cj: cronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "@every 20s" }), now: created.Add(25 * time.Second),
			check: func(t *testing.T, p Plan) {
				if p.Create == nil || !p.Scheduled.Equal(created.Add(20*time.Second)) {
					t.Errorf("create %v at %v", p.Create, p.Scheduled)
				}
			}},
		{name: "time zone", cj: cronJob(func(c *batchv1.CronJob) {
			c.Spec.Schedule = "0 12 * * *"
			c.Spec.TimeZone = ptr.To("Asia/Tokyo") // noon in Tokyo is 03:00 UTC
		}), now: time.Date(2026, 1, 2, 3, 0, 5, 0, time.UTC),
			check: func(t *testing.T, p Plan) {
				if p.Create == nil || !p.Scheduled.Equal(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)) ||
					p.Create.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "2026-01-02T12:00:00+09:00" {
					t.Errorf("create %+v at %v", p.Create, p.Scheduled)
				}
			}},
		{name: "finished jobs leave active, history is trimmed, lastSuccessfulTime set", cj: cronJob(func(c *batchv1.CronJob) {
			c.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](1)
			c.Status.Active = []corev1.ObjectReference{activeRef("s2")}
			c.Status.LastScheduleTime = &metav1.Time{Time: at(10, 3, 0)}
		}), jobs: []*batchv1.Job{childJob("s1", batchv1.JobComplete, at(10, 1, 0)), childJob("s2", batchv1.JobComplete, at(10, 3, 0)),
			childJob("f1", batchv1.JobFailed, at(10, 1, 0)), childJob("f2", batchv1.JobFailed, at(10, 2, 0))}, now: at(10, 3, 30),
			check: func(t *testing.T, p Plan) {
				var names []string
				for _, j := range p.Delete {
					names = append(names, j.Name)
				}
				if len(names) != 2 || names[0] != "s1" || names[1] != "f1" {
					t.Errorf("delete %v, want [s1 f1]", names)
				}
				if len(p.Status.Active) != 0 || p.Status.LastSuccessfulTime == nil || !p.Status.LastSuccessfulTime.Time.Equal(at(10, 3, 1)) {
					t.Errorf("status %+v", p.Status)
				}
			}},
		{name: "a gone active job is dropped", cj: cronJob(func(c *batchv1.CronJob) {
			c.Status.Active = []corev1.ObjectReference{activeRef("x")}
			c.Status.LastScheduleTime = &metav1.Time{Time: at(10, 3, 0)}
		}), gone: map[types.UID]bool{"x": true}, now: at(10, 3, 30),
			check: func(t *testing.T, p Plan) {
				if len(p.Status.Active) != 0 || len(p.Events) != 1 || p.Events[0].Reason != "MissingJob" {
					t.Errorf("active %v events %+v", p.Status.Active, p.Events)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, Compute(Input{CronJob: tc.cj, Jobs: tc.jobs, Gone: tc.gone, Now: tc.now}))
		})
	}
}
