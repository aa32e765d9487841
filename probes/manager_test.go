package probes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"berth/cri"
	"berth/cri/critest"
	"berth/internal/errdefs"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// target is an HTTP server whose answer per path the test sets.
type target struct {
	srv   *httptest.Server
	port  int
	mu    sync.Mutex
	codes map[string]int
	hits  map[string]int
}

func newTarget(t *testing.T) *target {
	tg := &target{codes: map[string]int{}, hits: map[string]int{}}
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.mu.Lock()
		tg.hits[r.URL.Path]++
		code := tg.codes[r.URL.Path]
		tg.mu.Unlock()
		if code == 0 {
			code = http.StatusOK
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(tg.srv.Close)
	_, tg.port = hostPort(t, tg.srv.URL)
	return tg
}

func (tg *target) set(path string, code int) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.codes[path] = code
}

func (tg *target) hitsOf(path string) int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.hits[path]
}

// harness runs a Manager on a fake clock.
type harness struct {
	t      *testing.T
	m      *Manager
	clk    *testingclock.FakeClock
	reg    *prometheus.Registry
	rec    *record.FakeRecorder
	ran    chan workerKey
	tg     *target
	cri    *critest.Server
	client *cri.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func newHarness(t *testing.T, jitter float64) *harness {
	h := &harness{
		t:    t,
		clk:  testingclock.NewFakeClock(t0),
		reg:  prometheus.NewRegistry(),
		rec:  record.NewFakeRecorder(1000),
		ran:  make(chan workerKey, 1000),
		tg:   newTarget(t),
		done: make(chan struct{}),
	}
	h.cri, h.client = newCRI(t)
	m, err := New(Config{
		Exec: h.client, Registerer: h.reg, Recorder: h.rec, Clock: h.clk,
		Jitter: func() float64 { return jitter },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.afterProbe = func(k workerKey) { h.ran <- k }
	h.m = m
	return h
}

// start runs the scheduler until the test ends.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		if err := h.m.Run(ctx); err != nil {
			h.t.Errorf("Run: %v", err)
		}
	}()
	h.t.Cleanup(func() {
		cancel()
		<-h.done
	})
}

// step advances the fake clock and waits for n worker runs.
func (h *harness) step(d time.Duration, n int) {
	h.t.Helper()
	h.clk.Step(d)
	h.expectRuns(n)
}

// expectRuns waits for n worker runs.
func (h *harness) expectRuns(n int) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-h.ran:
		case <-time.After(10 * time.Second):
			h.t.Fatalf("waited for %d worker runs, got %d", n, i)
		}
	}
}

// updates returns the updates sent so far.
func (h *harness) updates() []string {
	var out []string
	for {
		select {
		case u := <-h.m.Updates():
			out = append(out, fmt.Sprintf("%s %s %s %s", u.ContainerID, u.Type, u.Result, u.Message))
		default:
			return out
		}
	}
}

func (h *harness) expectUpdates(want ...string) {
	h.t.Helper()
	got := h.updates()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		h.t.Errorf("updates:\n got %q\nwant %q", got, want)
	}
}

// events returns the events recorded so far.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// counter reads prober_probe_total for the test pod's app container.
func (h *harness) counter(probeType, result string) float64 {
	c, err := h.m.metrics.total.GetMetricWithLabelValues(probeType, result, "app", "web", "default", "uid-1")
	if err != nil {
		h.t.Fatal(err)
	}
	return testutil.ToFloat64(c)
}

// httpProbe is a probe of path on the harness's target.
func (h *harness) httpProbe(path string, period, success, failure int32) *v1.Probe {
	return &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(h.tg.port))}},
		PeriodSeconds:    period,
		TimeoutSeconds:   1,
		SuccessThreshold: success,
		FailureThreshold: failure,
	}
}

func testPod(c v1.Container) *v1.Pod {
	c.Name = "app"
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{c}, RestartPolicy: v1.RestartPolicyAlways},
	}
}

// runningStatus is a pod status with app running as id since started.
func runningStatus(id string, started time.Time) *v1.PodStatus {
	return &v1.PodStatus{
		Phase: v1.PodRunning,
		PodIP: "127.0.0.1",
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "app", ContainerID: id,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
		}},
	}
}

func TestLivenessFailureThresholdAndRestart(t *testing.T) {
	h := newHarness(t, 0)
	pod := testPod(v1.Container{LivenessProbe: h.httpProbe("/live", 10, 1, 3)})
	h.m.AddPod(pod)
	h.m.UpdatePodStatus(pod, runningStatus("containerd://c1", t0))
	h.start()
	h.expectRuns(1)
	h.expectUpdates("containerd://c1 Liveness success ")
	if h.tg.hitsOf("/live") != 1 {
		t.Fatalf("first period: %d probes, want 1", h.tg.hitsOf("/live"))
	}

	h.tg.set("/live", 500)
	h.step(10*time.Second, 1)
	h.step(10*time.Second, 1)
	h.expectUpdates() // 2 failures < failureThreshold 3
	if r, _ := h.m.Result("containerd://c1", Liveness); r != Success {
		t.Errorf("after 2 failures: %q, want success", r)
	}
	h.step(10*time.Second, 1)
	h.expectUpdates("containerd://c1 Liveness failure HTTP probe failed with statuscode: 500")
	if got := h.events(); len(got) != 3 || got[0] != "Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500" {
		t.Errorf("events = %q, want 3 Unhealthy", got)
	}

	// On hold until a new container: no more probes of c1.
	h.step(10*time.Second, 1)
	h.step(10*time.Second, 1)
	if got := h.tg.hitsOf("/live"); got != 4 {
		t.Errorf("probes after the failure: %d in all, want 4 (on hold)", got)
	}

	// The agent restarted it: c2 starts alive and is probed again.
	h.tg.set("/live", 200)
	h.m.UpdatePodStatus(pod, runningStatus("containerd://c2", h.clk.Now()))
	h.step(10*time.Second, 1)
	h.expectUpdates("containerd://c2 Liveness success ")
	if _, ok := h.m.Result("containerd://c1", Liveness); ok {
		t.Error("c1's result is still published")
	}
	if got := h.tg.hitsOf("/live"); got != 5 {
		t.Errorf("probes: %d, want 5", got)
	}
	if s, f := h.counter("Liveness", "successful"), h.counter("Liveness", "failed"); s != 2 || f != 3 {
		t.Errorf("prober_probe_total successful=%v failed=%v, want 2 and 3", s, f)
	}
	// Exported on the registry passed in, under the kubelet's names.
	if n, err := testutil.GatherAndCount(h.reg, "prober_probe_total", "prober_probe_duration_seconds"); err != nil || n != 3 {
		t.Errorf("registry has %d prober series (%v), want 3 (successful, failed, duration)", n, err)
	}
}

func TestReadinessThresholdsAndPodStatus(t *testing.T) {
	h := newHarness(t, 0)
	pod := testPod(v1.Container{ReadinessProbe: h.httpProbe("/ready", 10, 2, 1)})
	h.m.AddPod(pod)
	st := runningStatus("containerd://c1", t0)
	h.m.UpdatePodStatus(pod, st)
	if st.ContainerStatuses[0].Ready || !*st.ContainerStatuses[0].Started {
		t.Fatalf("before any probe: ready=%v started=%v, want not ready, started", st.ContainerStatuses[0].Ready, *st.ContainerStatuses[0].Started)
	}
	h.start()
	h.expectRuns(1)
	h.expectUpdates("containerd://c1 Readiness failure ") // starts not ready; 1 success < 2
	h.step(10*time.Second, 1)
	h.expectUpdates("containerd://c1 Readiness success ")

	st = runningStatus("containerd://c1", t0)
	h.m.UpdatePodStatus(pod, st)
	if !st.ContainerStatuses[0].Ready {
		t.Fatal("after 2 successes: not ready")
	}

	h.tg.set("/ready", 503)
	h.step(10*time.Second, 1)
	h.expectUpdates("containerd://c1 Readiness failure HTTP probe failed with statuscode: 503")
	st = runningStatus("containerd://c1", t0)
	h.m.UpdatePodStatus(pod, st) // not ready: probes again at once, as the kubelet
	if st.ContainerStatuses[0].Ready {
		t.Fatal("after a failure: still ready")
	}
	h.expectRuns(1)
	if got := h.tg.hitsOf("/ready"); got != 4 {
		t.Errorf("probes: %d, want 4 (3 periods + 1 triggered)", got)
	}
	if got := h.counter("Readiness", "failed"); got != 2 {
		t.Errorf("failed = %v, want 2", got)
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	h := newHarness(t, 0)
	pod := testPod(v1.Container{
		StartupProbe:   h.httpProbe("/start", 5, 1, 30),
		LivenessProbe:  h.httpProbe("/live", 10, 1, 3),
		ReadinessProbe: h.httpProbe("/ready", 10, 1, 3),
	})
	h.tg.set("/start", 500)
	h.m.AddPod(pod)
	st := runningStatus("containerd://c1", t0)
	h.m.UpdatePodStatus(pod, st)
	if *st.ContainerStatuses[0].Started || st.ContainerStatuses[0].Ready {
		t.Fatal("started or ready before the startup probe ran")
	}
	h.start()
	h.expectRuns(3)
	got := h.updates()
	for _, want := range []string{"containerd://c1 Startup unknown ", "containerd://c1 Liveness success ", "containerd://c1 Readiness failure "} {
		if !contains(got, want) {
			t.Errorf("initial updates %q lack %q", got, want)
		}
	}
	if h.tg.hitsOf("/live")+h.tg.hitsOf("/ready") != 0 || h.tg.hitsOf("/start") != 1 {
		t.Fatalf("before started: live %d ready %d start %d probes, want 0 0 1", h.tg.hitsOf("/live"), h.tg.hitsOf("/ready"), h.tg.hitsOf("/start"))
	}

	h.tg.set("/start", 200)
	h.step(5*time.Second, 1) // startup only
	h.expectUpdates("containerd://c1 Startup success ")
	st = runningStatus("containerd://c1", t0)
	h.m.UpdatePodStatus(pod, st) // started, not ready yet: triggers readiness
	if !*st.ContainerStatuses[0].Started || st.ContainerStatuses[0].Ready {
		t.Fatalf("after startup: started=%v ready=%v, want started, not ready", *st.ContainerStatuses[0].Started, st.ContainerStatuses[0].Ready)
	}
	h.expectRuns(1)
	h.expectUpdates("containerd://c1 Readiness success ")
	h.step(5*time.Second, 2) // t=10: startup (on hold), liveness; readiness ran at 5 when triggered, next at 15
	if h.tg.hitsOf("/live") != 1 || h.tg.hitsOf("/start") != 2 {
		t.Errorf("after started: live %d start %d probes, want 1 and 2 (startup on hold)", h.tg.hitsOf("/live"), h.tg.hitsOf("/start"))
	}
}

func TestStartupFailureThreshold(t *testing.T) {
	h := newHarness(t, 0)
	pod := testPod(v1.Container{StartupProbe: h.httpProbe("/start", 10, 1, 2)})
	h.tg.set("/start", 500)
	h.m.AddPod(pod)
	h.m.UpdatePodStatus(pod, runningStatus("containerd://c1", t0))
	h.start()
	h.expectRuns(1)
	h.expectUpdates("containerd://c1 Startup unknown ")
	h.step(10*time.Second, 1)
	h.expectUpdates("containerd://c1 Startup failure HTTP probe failed with statuscode: 500")
	h.step(10*time.Second, 1)
	if got := h.tg.hitsOf("/start"); got != 2 {
		t.Errorf("probes: %d, want 2 (on hold after the failure)", got)
	}
}

func TestInitialDelay(t *testing.T) {
	h := newHarness(t, 0)
	p := h.httpProbe("/ready", 10, 1, 3)
	p.InitialDelaySeconds = 15
	pod := testPod(v1.Container{ReadinessProbe: p})
	h.m.AddPod(pod)
	h.m.UpdatePodStatus(pod, runningStatus("containerd://c1", t0))
	h.start()
	h.expectRuns(1)
	h.step(10*time.Second, 1) // 10s < 15s
	if got := h.tg.hitsOf("/ready"); got != 0 {
		t.Fatalf("probed %d times within the initial delay", got)
	}
	h.step(10*time.Second, 1)
	if got := h.tg.hitsOf("/ready"); got != 1 {
		t.Fatalf("probes after the delay: %d, want 1", got)
	}
}

func TestJitter(t *testing.T) {
	h := newHarness(t, 0.5)
	pod := testPod(v1.Container{LivenessProbe: h.httpProbe("/live", 10, 1, 3)})
	h.m.AddPod(pod)
	if due := h.m.workers[workerKey{"uid-1", "app", Liveness}].due; !due.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("first run at %v, want t0+5s (half the period)", due.Sub(t0))
	}
	// Long after the manager started, a new pod's probes start at once.
	h.clk.Step(time.Minute)
	pod2 := testPod(v1.Container{LivenessProbe: h.httpProbe("/live", 10, 1, 3)})
	pod2.UID = "uid-2"
	h.m.AddPod(pod2)
	if due := h.m.workers[workerKey{"uid-2", "app", Liveness}].due; !due.Equal(h.clk.Now()) {
		t.Errorf("late pod's first run at +%v, want now", due.Sub(h.clk.Now()))
	}
}

func TestWorkerStops(t *testing.T) {
	t.Run("pod succeeded", func(t *testing.T) {
		h := newHarness(t, 0)
		pod := testPod(v1.Container{ReadinessProbe: h.httpProbe("/ready", 10, 1, 3)})
		h.m.AddPod(pod)
		h.m.UpdatePodStatus(pod, runningStatus("containerd://c1", t0))
		h.start()
		h.expectRuns(1)
		h.updates()
		st := runningStatus("containerd://c1", t0)
		st.Phase = v1.PodSucceeded
		h.m.UpdatePodStatus(pod, st)
		h.step(10*time.Second, 1)
		h.m.mu.Lock()
		n, res := len(h.m.workers), len(h.m.results)
		h.m.mu.Unlock()
		if n != 0 || res != 0 {
			t.Errorf("workers %d results %d, want none", n, res)
		}
		if got := testutil.CollectAndCount(h.m.metrics.total); got != 0 {
			t.Errorf("%d prober_probe_total series left", got)
		}
	})
	t.Run("container exited and will not restart", func(t *testing.T) {
		h := newHarness(t, 0)
		pod := testPod(v1.Container{ReadinessProbe: h.httpProbe("/ready", 10, 1, 3)})
		pod.Spec.RestartPolicy = v1.RestartPolicyNever
		h.m.AddPod(pod)
		st := runningStatus("containerd://c1", t0)
		st.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
		h.m.UpdatePodStatus(pod, st)
		h.start()
		h.expectRuns(1)
		h.expectUpdates("containerd://c1 Readiness failure ")
		h.m.mu.Lock()
		n := len(h.m.workers)
		h.m.mu.Unlock()
		if n != 0 {
			t.Errorf("%d workers left", n)
		}
	})
	t.Run("pod deleted: liveness ends quietly", func(t *testing.T) {
		h := newHarness(t, 0)
		pod := testPod(v1.Container{LivenessProbe: h.httpProbe("/live", 10, 1, 1)})
		h.tg.set("/live", 500)
		h.m.AddPod(pod)
		deleting := pod.DeepCopy()
		now := metav1.NewTime(t0)
		deleting.DeletionTimestamp = &now
		h.m.UpdatePodStatus(deleting, runningStatus("containerd://c1", t0))
		h.start()
		h.expectRuns(1)
		h.expectUpdates("containerd://c1 Liveness success ")
		if h.tg.hitsOf("/live") != 0 {
			t.Error("probed a pod being deleted")
		}
	})
	t.Run("RemovePod and CleanupPods", func(t *testing.T) {
		h := newHarness(t, 0)
		pod := testPod(v1.Container{LivenessProbe: h.httpProbe("/live", 10, 1, 1), ReadinessProbe: h.httpProbe("/ready", 10, 1, 1)})
		h.m.AddPod(pod)
		h.m.UpdatePodStatus(pod, runningStatus("containerd://c1", t0))
		other := testPod(v1.Container{LivenessProbe: h.httpProbe("/live", 10, 1, 1)})
		other.UID = "uid-2"
		h.m.AddPod(other)
		h.start()
		h.expectRuns(3)
		h.m.StopLivenessAndStartup(pod)
		if _, ok := h.m.Result("containerd://c1", Liveness); ok {
			t.Error("liveness result kept after StopLivenessAndStartup")
		}
		if _, ok := h.m.Result("containerd://c1", Readiness); !ok {
			t.Error("readiness stopped by StopLivenessAndStartup")
		}
		h.m.RemovePod(pod)
		if _, ok := h.m.Result("containerd://c1", Readiness); ok {
			t.Error("readiness result kept after RemovePod")
		}
		h.m.CleanupPods(sets.New[types.UID]("uid-3"))
		h.m.mu.Lock()
		n, q := len(h.m.workers), h.m.queue.Len()
		h.m.mu.Unlock()
		if n != 0 || q != 0 {
			t.Errorf("workers %d queued %d after cleanup, want none", n, q)
		}
	})
}

func TestProbeErrorsDoNotCount(t *testing.T) {
	h := newHarness(t, 0)
	id := startContainers(t, h.client, 1)[0]
	pod := testPod(v1.Container{LivenessProbe: &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
		PeriodSeconds: 10, FailureThreshold: 1,
	}})
	h.m.AddPod(pod)
	h.m.UpdatePodStatus(pod, runningStatus("containerd://"+id, t0))
	h.cri.Inject("ExecSync", status.Error(codes.Unavailable, "runtime busy"))
	h.start()
	h.expectRuns(1)
	h.expectUpdates("containerd://" + id + " Liveness success ")
	if got := h.cri.Calls("ExecSync"); got != maxProbeRetries {
		t.Errorf("ExecSync called %d times, want %d (retries)", got, maxProbeRetries)
	}
	ev := h.events()
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning Unhealthy Liveness probe errored and resulted in unknown state: exec probe in container "+id+": cri ExecSync") {
		t.Errorf("events = %q", ev)
	}
	if c := h.counter("Liveness", "failed") + h.counter("Liveness", "unknown"); c != 0 {
		t.Errorf("errored probe counted: %v", c)
	}
	h.cri.Clear("ExecSync")
	h.cri.SetExecHandler(func(context.Context, string, []string) ([]byte, []byte, int32, error) {
		return []byte("dead"), nil, 1, nil
	})
	h.step(10*time.Second, 1)
	h.expectUpdates("containerd://" + id + " Liveness failure dead")
}

func TestNewValidates(t *testing.T) {
	_, client := newCRI(t)
	if _, err := New(Config{}); !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "Exec") {
		t.Errorf("no Exec: %v", err)
	}
	if _, err := New(Config{Exec: client, MaxInFlight: -1}); !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "MaxInFlight") {
		t.Errorf("negative MaxInFlight: %v", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := New(Config{Exec: client, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Exec: client, Registerer: reg}); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("second Manager on one registry: %v", err)
	}
}

func TestKillGracePeriod(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	c := &v1.Container{LivenessProbe: &v1.Probe{TerminationGracePeriodSeconds: i(5)}, StartupProbe: &v1.Probe{}}
	tests := []struct {
		name string
		pod  v1.Pod
		t    ProbeType
		want int64
	}{
		{"probe's own", v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: i(30)}}, Liveness, 5},
		{"pod's when the probe has none", v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: i(30)}}, Startup, 30},
		{"deletion grace first", v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionGracePeriodSeconds: i(1)}, Spec: v1.PodSpec{TerminationGracePeriodSeconds: i(30)}}, Liveness, 1},
		{"minimum without any", v1.Pod{}, Liveness, 2},
	}
	for _, tt := range tests {
		if got := KillGracePeriod(&tt.pod, c, tt.t); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
