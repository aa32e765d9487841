package scheduler

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	st "berth/controlplane/scheduler/schedtest"
)

func newTestQueue() (*Queue, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return NewQueue(QueueConfig{Clock: clk}), clk
}

func priority(p int32) st.PodOpt { return func(pod *v1.Pod) { pod.Spec.Priority = &p } }

func popName(t *testing.T, q *Queue) string {
	t.Helper()
	if a, _, _ := q.Lengths(); a == 0 {
		t.Fatal("Pop on an empty activeQ would block")
	}
	return q.Pop().Pod.Name
}

func TestQueueOrdersByPriorityThenArrival(t *testing.T) {
	q, clk := newTestQueue()
	q.Add(st.Pod("low-early", priority(1)))
	clk.Step(time.Millisecond)
	q.Add(st.Pod("high", priority(100)))
	clk.Step(time.Millisecond)
	q.Add(st.Pod("low-late", priority(1)))
	clk.Step(time.Millisecond)
	q.Add(st.Pod("none-set"))
	var got []string
	for range 4 {
		got = append(got, popName(t, q))
	}
	want := []string{"high", "low-early", "low-late", "none-set"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pop order %v, want %v", got, want)
		}
	}
}

func TestBackoffDurationDoublesToMax(t *testing.T) {
	q, _ := newTestQueue()
	want := []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := q.BackoffDuration(i + 1); got != w {
			t.Errorf("BackoffDuration(%d) = %s, want %s", i+1, got, w)
		}
	}
}

func TestUnschedulablePodParkedUntilEventThenBacksOff(t *testing.T) {
	q, clk := newTestQueue()
	q.Add(st.Pod("p"))
	qp := q.Pop()
	q.AddUnschedulableIfNotPresent(qp, true)
	if a, b, u := q.Lengths(); a != 0 || b != 0 || u != 1 {
		t.Fatalf("after failure: active/backoff/unschedulable = %d/%d/%d, want 0/0/1", a, b, u)
	}
	// Backoff flushes do not release a parked pod.
	clk.Step(20 * time.Second)
	q.FlushBackoffCompleted()
	if _, _, u := q.Lengths(); u != 1 {
		t.Fatal("a parked pod left without a cluster event")
	}
	// An event moves it; its 1s back-off has long expired → activeQ.
	q.MoveAllToActiveOrBackoffQueue(nil)
	if a, _, u := q.Lengths(); a != 1 || u != 0 {
		t.Fatalf("after event: active %d unschedulable %d, want 1 and 0", a, u)
	}
	qp = q.Pop()
	if qp.Attempts != 2 {
		t.Errorf("attempts = %d, want 2", qp.Attempts)
	}
	q.AddUnschedulableIfNotPresent(qp, true)
	// Event right after the second failure: back-off 2s not over → backoffQ.
	clk.Step(time.Second)
	q.MoveAllToActiveOrBackoffQueue(nil)
	if a, b, _ := q.Lengths(); a != 0 || b != 1 {
		t.Fatalf("event during back-off: active/backoff = %d/%d, want 0/1", a, b)
	}
	clk.Step(999 * time.Millisecond)
	q.FlushBackoffCompleted()
	if a, _, _ := q.Lengths(); a != 0 {
		t.Fatal("pod left backoffQ before its 2s back-off ended")
	}
	clk.Step(time.Millisecond)
	q.FlushBackoffCompleted()
	if a, b, _ := q.Lengths(); a != 1 || b != 0 {
		t.Fatalf("after 2s: active/backoff = %d/%d, want 1/0", a, b)
	}
}

func TestEventDuringAttemptSkipsParking(t *testing.T) {
	q, _ := newTestQueue()
	q.Add(st.Pod("p"))
	qp := q.Pop()
	// A node was added while the pod was being scheduled.
	q.MoveAllToActiveOrBackoffQueue(nil)
	q.AddUnschedulableIfNotPresent(qp, true)
	if _, b, u := q.Lengths(); b != 1 || u != 0 {
		t.Fatalf("backoff/unschedulable = %d/%d, want 1/0: the event may have helped", b, u)
	}
}

func TestErrorsGoToBackoff(t *testing.T) {
	q, clk := newTestQueue()
	q.Add(st.Pod("p"))
	q.AddUnschedulableIfNotPresent(q.Pop(), false)
	if _, b, _ := q.Lengths(); b != 1 {
		t.Fatalf("backoff = %d, want 1", b)
	}
	clk.Step(time.Second)
	q.FlushBackoffCompleted()
	if a, _, _ := q.Lengths(); a != 1 {
		t.Fatalf("active = %d after the 1s back-off, want 1", a)
	}
}

func TestUnschedulableLeftoverFlushedAfterFiveMinutes(t *testing.T) {
	q, clk := newTestQueue()
	q.Add(st.Pod("p"))
	q.AddUnschedulableIfNotPresent(q.Pop(), true)
	clk.Step(5 * time.Minute)
	q.FlushUnschedulableLeftover()
	if _, _, u := q.Lengths(); u != 1 {
		t.Fatal("flushed at exactly 5 minutes, want strictly longer")
	}
	clk.Step(time.Second)
	q.FlushUnschedulableLeftover()
	if a, _, u := q.Lengths(); a != 1 || u != 0 {
		t.Fatalf("active/unschedulable = %d/%d after 5m1s, want 1/0", a, u)
	}
}

func TestUpdateOfParkedPod(t *testing.T) {
	q, _ := newTestQueue()
	pod := st.Pod("p")
	q.Add(pod)
	q.AddUnschedulableIfNotPresent(q.Pop(), true)

	statusOnly := pod.DeepCopy()
	statusOnly.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	q.Update(statusOnly)
	if _, _, u := q.Lengths(); u != 1 {
		t.Fatal("a status-only update released a parked pod")
	}
	relabelled := statusOnly.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	q.Update(relabelled)
	if _, _, u := q.Lengths(); u != 0 {
		t.Fatal("a label change left the pod parked")
	}
}

func TestDeleteAndMatchFilter(t *testing.T) {
	q, clk := newTestQueue()
	q.Add(st.Pod("a"))
	q.Add(st.Pod("b", st.Spread(v1.LabelHostname, 1, v1.DoNotSchedule, "x")))
	pa, pb := q.Pop(), q.Pop()
	q.AddUnschedulableIfNotPresent(pa, true)
	q.AddUnschedulableIfNotPresent(pb, true)
	clk.Step(2 * time.Second)
	q.MoveAllToActiveOrBackoffQueue(podWithAffinityOrSpread)
	if a, _, u := q.Lengths(); a != 1 || u != 1 {
		t.Fatalf("active/unschedulable = %d/%d, want only the spread pod moved", a, u)
	}
	q.Delete(pa.Pod)
	q.Delete(pb.Pod)
	if a, b, u := q.Lengths(); a+b+u != 0 {
		t.Fatalf("after deletes: %d/%d/%d, want empty", a, b, u)
	}
}

func TestPopReturnsNilAfterClose(t *testing.T) {
	q, _ := newTestQueue()
	done := make(chan *QueuedPodInfo)
	go func() { done <- q.Pop() }()
	q.Close()
	if p := <-done; p != nil {
		t.Fatalf("Pop after Close = %v, want nil", p.Pod.Name)
	}
}

func TestRunFlushesOnTicks(t *testing.T) {
	q, clk := newTestQueue()
	q.Add(st.Pod("p"))
	q.AddUnschedulableIfNotPresent(q.Pop(), false)
	ctx, cancel := contextWithCancel(t)
	stopped := make(chan struct{})
	go func() { q.Run(ctx); close(stopped) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if clk.HasWaiters() {
			clk.Step(time.Second)
		}
		if a, _, _ := q.Lengths(); a == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the backoff flush loop never moved the pod")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-stopped
	if q.Pop() != nil {
		t.Fatal("Pop after Run ended returned a pod, want nil (closed)")
	}
}
