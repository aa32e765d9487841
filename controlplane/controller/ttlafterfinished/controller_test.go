package ttlafterfinished

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestExpiry(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	finished := func(ttl *int32, ct batchv1.JobConditionType) *batchv1.Job {
		return &batchv1.Job{Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl}, Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: ct, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: t0}}}}}
	}
	deleting := finished(ptr.To[int32](0), batchv1.JobComplete)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	for _, tc := range []struct {
		name string
		job  *batchv1.Job
		now  time.Time
		due  bool
		wait time.Duration
	}{
		{"no TTL", finished(nil, batchv1.JobComplete), t0.Add(time.Hour), false, 0},
		{"running", finished(ptr.To[int32](5), batchv1.JobSuspended), t0.Add(time.Hour), false, 0},
		{"before expiry", finished(ptr.To[int32](60), batchv1.JobComplete), t0.Add(20 * time.Second), false, 40 * time.Second},
		{"expired complete", finished(ptr.To[int32](60), batchv1.JobComplete), t0.Add(60 * time.Second), true, 0},
		{"expired failed, TTL 0", finished(ptr.To[int32](0), batchv1.JobFailed), t0, true, 0},
		{"already deleting", deleting, t0.Add(time.Hour), false, 0},
	} {
		due, wait := Expiry(tc.job, tc.now)
		if due != tc.due || wait != tc.wait {
			t.Errorf("%s: Expiry = %v, %v; want %v, %v", tc.name, due, wait, tc.due, tc.wait)
		}
	}
}
