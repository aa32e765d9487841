package metrics

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// newStartupMetrics returns metrics whose startup tracker runs on a fake
// clock.
func newStartupMetrics(t *testing.T, clk *clocktesting.FakeClock) *Metrics {
	t.Helper()
	m, err := New(prometheus.NewRegistry(), "node1")
	if err != nil {
		t.Fatal(err)
	}
	m.startup = newStartupTracker(clk)
	return m
}

// startupPod is a pod created at created with the given container states
// (true: running).
func startupPod(uid string, created time.Time, running ...bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)}}
	for i, r := range running {
		cs := v1.ContainerStatus{Name: string(rune('a' + i))}
		if r {
			cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(created.Add(time.Second))}
		} else {
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
	}
	return p
}

func histogram(t *testing.T, h prometheus.Histogram) (count uint64, sum float64) {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestPodStartSLIExcludesImagePulling(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(created.Add(100 * time.Millisecond))
	m := newStartupMetrics(t, clk)

	pending := startupPod("p1", created, false, false)
	m.PodObservedOnWatch(pending, clk.Now()) // seen before acknowledged: tracked
	m.ImagePullStarted(pending.UID, clk.Now())
	clk.Step(2 * time.Second)
	m.ImagePullFinished(pending.UID, clk.Now())
	m.ImagePullStarted(pending.UID, clk.Now()) // a second pull: the first start counts
	clk.Step(time.Second)
	m.ImagePullFinished(pending.UID, clk.Now()) // … and the last finish
	clk.Step(400 * time.Millisecond)

	// Not all containers started: nothing yet, even when written.
	half := startupPod("p1", created, true, false)
	m.PodStatusWritten(half)
	m.PodObservedOnWatch(half, clk.Now())
	if n, _ := histogram(t, m.podStartSLIDuration); n != 0 {
		t.Fatalf("SLI observed %d times before every container started", n)
	}
	running := startupPod("p1", created, true, true)
	running.Status.StartTime = &metav1.Time{Time: created.Add(200 * time.Millisecond)}
	m.PodObservedOnWatch(running, clk.Now()) // running on the watch, but not written by the agent yet
	if n, _ := histogram(t, m.podStartSLIDuration); n != 0 {
		t.Fatal("SLI observed before the agent wrote the running status")
	}
	m.PodStatusWritten(running)
	clk.Step(100 * time.Millisecond)
	m.PodObservedOnWatch(running, clk.Now())
	m.PodObservedOnWatch(running, clk.Now().Add(time.Second)) // later updates: once per pod

	// created → observed: 0.1+2+1+0.4+0.1 = 3.6 s; pulling 3 s.
	n, sum := histogram(t, m.podStartSLIDuration)
	if n != 1 || sum < 0.599 || sum > 0.601 {
		t.Errorf("kubelet_pod_start_sli_duration_seconds: %d samples, sum %v; want 1 of 0.6", n, sum)
	}
	n, sum = histogram(t, m.podStartTotalDuration)
	if n != 1 || sum < 3.599 || sum > 3.601 {
		t.Errorf("kubelet_pod_start_total_duration_seconds: %d samples, sum %v; want 1 of 3.6", n, sum)
	}
}

func TestPodStartSLISkipsPodsAcknowledgedBefore(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(created.Add(time.Hour))
	m := newStartupMetrics(t, clk)
	// A pod the agent acknowledged before (status.startTime set), e.g. after
	// an agent restart: not measured.
	old := startupPod("old", created, true)
	old.Status.StartTime = &metav1.Time{Time: created}
	m.PodObservedOnWatch(old, clk.Now())
	m.PodStatusWritten(old)
	m.PodObservedOnWatch(old, clk.Now())
	// A finished pod is forgotten.
	done := startupPod("done", created, false)
	m.PodObservedOnWatch(done, clk.Now())
	done.Status.Phase = v1.PodSucceeded
	m.PodObservedOnWatch(done, clk.Now())
	// A removed pod is forgotten.
	gone := startupPod("gone", created, false)
	m.PodObservedOnWatch(gone, clk.Now())
	m.ForgetPodStartup(gone.UID)
	if n := len(m.startup.pods); n != 0 {
		t.Errorf("tracker holds %d pods, want none", n)
	}
	if n, _ := histogram(t, m.podStartSLIDuration); n != 0 {
		t.Errorf("SLI observed %d times, want none", n)
	}
}

func TestPodStartSLIWithoutPulls(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(created)
	m := newStartupMetrics(t, clk)
	p := startupPod("p", created, false)
	m.PodObservedOnWatch(p, clk.Now())
	clk.Step(1500 * time.Millisecond)
	p = startupPod("p", created, true)
	m.PodStatusWritten(p)
	m.PodObservedOnWatch(p, clk.Now())
	if n, sum := histogram(t, m.podStartSLIDuration); n != 1 || sum != 1.5 {
		t.Errorf("SLI %d samples, sum %v; want 1 of 1.5 (images present: nothing subtracted)", n, sum)
	}
}

func TestPodStartMetricsAreExposedWithTheKubeletNamesAndBuckets(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, "node1")
	if err != nil {
		t.Fatal(err)
	}
	m.PodRunning(700 * time.Millisecond)
	created := time.Now().Add(-2 * time.Second)
	p := startupPod("p", created, false)
	m.PodObservedOnWatch(p, time.Now())
	p = startupPod("p", created, true)
	m.PodStatusWritten(p)
	m.PodObservedOnWatch(p, time.Now())
	for _, name := range []string{"kubelet_pod_start_duration_seconds", "kubelet_pod_start_sli_duration_seconds", "kubelet_pod_start_total_duration_seconds"} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 1 {
			t.Errorf("%s: %d series (err %v), want 1", name, n, err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := "0.5 1 2 3 4 5 6 8 10 20 30 45 60 120 180 240 300 360 480 600 900 1200 1800 2700 3600"
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "kubelet_pod_start_") {
			continue
		}
		var bounds []string
		for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
			bounds = append(bounds, strconv.FormatFloat(b.GetUpperBound(), 'f', -1, 64))
		}
		if got := strings.Join(bounds, " "); got != want {
			t.Errorf("%s buckets %s, want the kubelet's %s", mf.GetName(), got, want)
		}
	}
}
