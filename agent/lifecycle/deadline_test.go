package lifecycle

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/agent/podstate"
)

func TestActiveDeadline(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	withDeadline := func(d *int64) *v1.Pod {
		pod := testPod(v1.RestartPolicyAlways, nil, "app")
		pod.Spec.ActiveDeadlineSeconds = d
		return pod
	}
	running := func(pod *v1.Pod) *podstate.Pod {
		return observe(pod).sandbox("sb", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).build()
	}
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		rt        func(*v1.Pod) *podstate.Pod
		start     time.Time
		now       time.Time
		exceeded  bool
		retryAt   time.Time // when not exceeded
		wantStart bool      // a container start is planned
	}{
		{name: "no deadline", pod: withDeadline(nil), rt: running, start: t0, now: t0.Add(time.Hour)},
		{name: "not started yet: no deadline counts", pod: withDeadline(secs(1)), start: time.Time{}, now: t0.Add(time.Hour), wantStart: true},
		{name: "before the deadline: look again at it", pod: withDeadline(secs(30)), rt: running, start: t0, now: t0.Add(10 * time.Second), retryAt: t0.Add(30 * time.Second)},
		{name: "before the deadline, starting", pod: withDeadline(secs(30)), start: t0, now: t0, retryAt: t0.Add(30 * time.Second), wantStart: true},
		{name: "at the deadline", pod: withDeadline(secs(30)), rt: running, start: t0, now: t0.Add(30 * time.Second), exceeded: true},
		{name: "past the deadline", pod: withDeadline(secs(5)), rt: running, start: t0, now: t0.Add(time.Minute), exceeded: true},
		{name: "past the deadline, nothing started again", pod: withDeadline(secs(5)), start: t0, now: t0.Add(time.Minute), exceeded: true},
		{name: "a zero deadline", pod: withDeadline(secs(0)), rt: running, start: t0, now: t0, exceeded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rt *podstate.Pod
			if tc.rt != nil {
				rt = tc.rt(tc.pod)
			}
			plan := Compute(Input{Pod: tc.pod, Runtime: rt, Now: tc.now, StartTime: tc.start})
			if plan.DeadlineExceeded != tc.exceeded {
				t.Fatalf("DeadlineExceeded = %v, want %v", plan.DeadlineExceeded, tc.exceeded)
			}
			if tc.exceeded {
				if !plan.KillPod || plan.CreateSandbox || len(plan.ContainersToStart) != 0 || plan.InitToStart != nil {
					t.Fatalf("plan %+v: want the pod killed and nothing started", plan)
				}
				return
			}
			if !plan.RetryAt.Equal(tc.retryAt) {
				t.Errorf("RetryAt = %v, want %v", plan.RetryAt, tc.retryAt)
			}
			if got := len(plan.ContainersToStart) > 0; got != tc.wantStart {
				t.Errorf("starts %v, want %v", got, tc.wantStart)
			}
		})
	}

	t.Run("a shortened deadline takes effect at the next sync", func(t *testing.T) {
		pod := withDeadline(secs(3600))
		in := Input{Pod: pod, Runtime: running(pod), Now: t0.Add(time.Minute), StartTime: t0}
		if Compute(in).DeadlineExceeded {
			t.Fatal("exceeded before the update")
		}
		in.Pod = withDeadline(secs(30))
		if !Compute(in).DeadlineExceeded {
			t.Fatal("not exceeded after the deadline was shortened below the time the pod ran")
		}
	})
}
