package podworker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"berth/cri"
	"berth/cri/critest"
	"berth/probes"
)

// probeHarness is a harness whose manager has a prober on a fake clock (the
// test steps it to run probes), a hook runner and client-go's fake event
// recorder.
type probeHarness struct {
	*harness
	clock  *clocktesting.FakeClock
	events *eventLog
}

// eventLog collects the fake recorder's events ("<type> <reason> <message>").
type eventLog struct {
	rec *record.FakeRecorder
	mu  sync.Mutex
	all []string
}

func (l *eventLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		select {
		case e := <-l.rec.Events:
			l.all = append(l.all, e)
		default:
			return slices.Clone(l.all)
		}
	}
}

func (l *eventLog) has(prefix string) bool {
	for _, e := range l.list() {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func newProbeHarness(t *testing.T, srv *critest.Server) *probeHarness {
	t.Helper()
	ph := &probeHarness{clock: clocktesting.NewFakeClock(time.Now()), events: &eventLog{rec: record.NewFakeRecorder(1000)}}
	ph.harness = newConfiguredHarness(t, srv, func(cfg *Config) {
		prober, err := probes.New(probes.Config{Exec: cfg.CRI.(*cri.Client), Clock: ph.clock, Recorder: ph.events.rec, Jitter: func() float64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		hooks, err := probes.NewHookRunner(probes.HookConfig{Exec: cfg.CRI.(*cri.Client)})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Probes, cfg.Hooks, cfg.Recorder = prober, hooks, ph.events.rec
	})
	return ph
}

// until polls cond, stepping the probe clock by a second each time.
func (ph *probeHarness) until(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	eventually(t, what, func() (bool, string) {
		ph.clock.Step(time.Second)
		return cond()
	})
}

func execProbe(cmd ...string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}, PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1}
}

func condStatus(st v1.PodStatus, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// scriptedExec answers exec probes and hooks by the command's first word:
// each gets the exit code its function returns; calls are counted.
type scriptedExec struct {
	mu    sync.Mutex
	exits map[string]func(ctx context.Context, id string) int32
	calls map[string]int
}

func newScriptedExec(srv *critest.Server) *scriptedExec {
	s := &scriptedExec{exits: map[string]func(context.Context, string) int32{}, calls: map[string]int{}}
	srv.SetExecHandler(func(ctx context.Context, id string, cmd []string) ([]byte, []byte, int32, error) {
		s.mu.Lock()
		f := s.exits[cmd[0]]
		s.calls[cmd[0]]++
		s.mu.Unlock()
		if f == nil {
			return nil, nil, 0, nil
		}
		code := f(ctx, id)
		return []byte(cmd[0] + " said " + fmt.Sprint(code)), nil, code, nil
	})
	return s
}

func (s *scriptedExec) set(word string, f func(ctx context.Context, id string) int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exits[word] = f
}

func (s *scriptedExec) count(word string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[word]
}

func TestLivenessFailureRestartsContainerCountingRestarts(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	exec := newScriptedExec(srv)
	var healthy atomic.Bool
	healthy.Store(true)
	exec.set("alive", func(context.Context, string) int32 {
		if healthy.Load() {
			return 0
		}
		return 1
	})
	ph := newProbeHarness(t, srv)
	pod := testPod("live", v1.RestartPolicyAlways, nil, "app")
	probeGrace := int64(7)
	pod.Spec.Containers[0].LivenessProbe = execProbe("alive")
	pod.Spec.Containers[0].LivenessProbe.TerminationGracePeriodSeconds = &probeGrace
	ph.m.Update(pod)

	first := ""
	ph.until(t, "app running and probed healthy", func() (bool, string) {
		c := ph.running(pod.UID, "app")
		if c == nil {
			return false, "not running"
		}
		first = c.GetId()
		return exec.count("alive") > 0, "no probe yet"
	})
	if cs := containerStatus(ph.podStatus(pod.UID), "app"); cs.RestartCount != 0 {
		t.Fatalf("a healthy container restarted: %+v", cs)
	}
	healthy.Store(false)
	ph.until(t, "two restarts counted", func() (bool, string) {
		cs := containerStatus(ph.podStatus(pod.UID), "app")
		return cs.RestartCount >= 2 && cs.State.Running != nil, fmt.Sprintf("%+v", cs)
	})
	if secs, ok := srv.LastStopTimeout(first); !ok || secs != probeGrace {
		t.Errorf("the unhealthy container was stopped with timeout %d (%v), want the probe's terminationGracePeriodSeconds %d", secs, ok, probeGrace)
	}
	if !ph.events.has("Normal Killing Container app failed liveness probe, will be restarted") {
		t.Errorf("no Killing event for the liveness failure in %q", ph.events.list())
	}
	if !ph.events.has("Warning Unhealthy Liveness probe failed: alive said 1") {
		t.Errorf("no Unhealthy event in %q", ph.events.list())
	}
	// Healthy again: the restarts stop.
	healthy.Store(true)
	var count int32
	ph.until(t, "the restarted container running", func() (bool, string) {
		cs := containerStatus(ph.podStatus(pod.UID), "app")
		count = cs.RestartCount
		return cs.State.Running != nil && ph.running(pod.UID, "app") != nil, fmt.Sprintf("%+v", cs)
	})
	for range 5 {
		ph.clock.Step(time.Second)
		time.Sleep(20 * time.Millisecond) // let probes run: a healthy container must not restart
	}
	if cs := containerStatus(ph.podStatus(pod.UID), "app"); cs.RestartCount != count {
		t.Errorf("a healthy container restarted: %d → %d", count, cs.RestartCount)
	}
}

func TestLivenessFailureWithRestartPolicyNeverFailsPod(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	exec := newScriptedExec(srv)
	exec.set("alive", func(context.Context, string) int32 { return 1 })
	ph := newProbeHarness(t, srv)
	pod := testPod("never", v1.RestartPolicyNever, nil, "app")
	pod.Spec.Containers[0].LivenessProbe = execProbe("alive")
	ph.m.Update(pod)
	ph.until(t, "pod Failed", func() (bool, string) {
		st := ph.podStatus(pod.UID)
		return st.Phase == v1.PodFailed, fmt.Sprintf("%+v", st)
	})
	if cs := containerStatus(ph.podStatus(pod.UID), "app"); cs.RestartCount != 0 || cs.State.Terminated == nil {
		t.Errorf("app = %+v, want terminated and never restarted", cs)
	}
	// As upstream, the pod is killed whole (no container is left to run),
	// so the Killing event is the plain one; none promises a restart.
	if !ph.events.has("Warning Unhealthy Liveness probe failed") || !ph.events.has("Normal Killing ") || ph.events.has("Normal Killing Container app failed liveness probe, will be restarted") {
		t.Errorf("events %q, want Unhealthy and Killing events, no restart", ph.events.list())
	}
}

func TestReadinessFlipsReadyBothWays(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	exec := newScriptedExec(srv)
	var ready atomic.Bool
	exec.set("ready", func(context.Context, string) int32 {
		if ready.Load() {
			return 0
		}
		return 1
	})
	ph := newProbeHarness(t, srv)
	pod := testPod("ready", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.Containers[0].ReadinessProbe = execProbe("ready")
	ph.m.Update(pod)

	isReady := func(want bool) func() (bool, string) {
		return func() (bool, string) {
			st := ph.podStatus(pod.UID)
			cs := containerStatus(st, "app")
			wantCond := v1.ConditionFalse
			if want {
				wantCond = v1.ConditionTrue
			}
			return cs.State.Running != nil && cs.Ready == want && condStatus(st, v1.PodReady) == wantCond &&
				condStatus(st, v1.ContainersReady) == wantCond, fmt.Sprintf("%+v", st)
		}
	}
	ph.until(t, "running, probed, not ready", func() (bool, string) {
		ok, detail := isReady(false)()
		return ok && exec.count("ready") > 0, detail
	})
	ready.Store(true)
	ph.until(t, "Ready", isReady(true))
	ready.Store(false)
	ph.until(t, "not Ready again", isReady(false))
	ready.Store(true)
	ph.until(t, "Ready again", isReady(true))
	if cs := containerStatus(ph.podStatus(pod.UID), "app"); cs.RestartCount != 0 {
		t.Errorf("readiness restarted the container: %+v", cs)
	}
}

func TestStartupProbeHoldsBackLiveness(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	exec := newScriptedExec(srv)
	var started atomic.Bool
	exec.set("started", func(context.Context, string) int32 {
		if started.Load() {
			return 0
		}
		return 1
	})
	exec.set("alive", func(context.Context, string) int32 { return 0 })
	ph := newProbeHarness(t, srv)
	pod := testPod("slow", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.Containers[0].StartupProbe = execProbe("started")
	pod.Spec.Containers[0].StartupProbe.FailureThreshold = 1000
	pod.Spec.Containers[0].LivenessProbe = execProbe("alive")
	ph.m.Update(pod)

	ph.until(t, "startup probed several times", func() (bool, string) {
		return exec.count("started") >= 3, fmt.Sprint(exec.count("started"))
	})
	cs := containerStatus(ph.podStatus(pod.UID), "app")
	if cs.State.Running == nil || cs.Started == nil || *cs.Started || cs.Ready {
		t.Errorf("before its startup probe succeeds app = %+v, want running, not started, not ready", cs)
	}
	if n := exec.count("alive"); n != 0 {
		t.Errorf("liveness probed %d times before the startup probe succeeded", n)
	}
	started.Store(true)
	ph.until(t, "started, ready and liveness probed", func() (bool, string) {
		cs := containerStatus(ph.podStatus(pod.UID), "app")
		return cs.Started != nil && *cs.Started && cs.Ready && exec.count("alive") > 0, fmt.Sprintf("%+v alive=%d", cs, exec.count("alive"))
	})
	if cs := containerStatus(ph.podStatus(pod.UID), "app"); cs.RestartCount != 0 {
		t.Errorf("the slow starter was restarted: %+v", cs)
	}
}

func TestStartupProbeFailureRestartsContainer(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	exec := newScriptedExec(srv)
	exec.set("started", func(context.Context, string) int32 { return 1 })
	ph := newProbeHarness(t, srv)
	pod := testPod("nostart", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.Containers[0].StartupProbe = execProbe("started")
	pod.Spec.Containers[0].StartupProbe.FailureThreshold = 2
	ph.m.Update(pod)
	ph.until(t, "restarted", func() (bool, string) {
		cs := containerStatus(ph.podStatus(pod.UID), "app")
		return cs.RestartCount >= 1, fmt.Sprintf("%+v", cs)
	})
	if !ph.events.has("Normal Killing Container app failed startup probe, will be restarted") {
		t.Errorf("no Killing event for the startup failure in %q", ph.events.list())
	}
}

func TestPostStartHookRunsBeforeRunning(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	exec := newScriptedExec(srv)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	exec.set("poststart", func(ctx context.Context, _ string) int32 {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return 0
	})
	ph := newProbeHarness(t, srv)
	pod := testPod("hooked", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"poststart"}}}}
	ph.m.Update(pod)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the postStart hook never ran")
	}
	if ph.running(pod.UID, "app") == nil {
		t.Fatal("the postStart hook ran before the container was running in the runtime")
	}
	ph.m.Wake(pod.UID)
	if cs := containerStatus(ph.podStatus(pod.UID), "app"); cs.State.Running != nil || cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("app = %+v while its postStart hook runs, want waiting in ContainerCreating", cs)
	}
	close(release)
	ph.until(t, "Running after the hook", func() (bool, string) {
		cs := containerStatus(ph.podStatus(pod.UID), "app")
		return cs.State.Running != nil && cs.Ready, fmt.Sprintf("%+v", cs)
	})
}

func TestPostStartHookFailureKillsAndBacksOff(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	exec := newScriptedExec(srv)
	exec.set("poststart", func(context.Context, string) int32 { return 3 })
	ph := newProbeHarness(t, srv)
	pod := testPod("badhook", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"poststart"}}}}
	ph.m.Update(pod)
	ph.until(t, "restarted after failed hooks, in back-off", func() (bool, string) {
		cs := containerStatus(ph.podStatus(pod.UID), "app")
		return cs.RestartCount >= 2 && exec.count("poststart") >= 3, fmt.Sprintf("%+v", cs)
	})
	found := false
	for _, e := range ph.events.list() {
		if strings.HasPrefix(e, "Warning FailedPostStartHook Exec lifecycle hook ([poststart]) for Container \"app\" in Pod \"badhook_default(uid-badhook)\" failed - error: command 'poststart' exited with 3") {
			found = true
		}
	}
	if !found {
		t.Errorf("no FailedPostStartHook event in %q", ph.events.list())
	}
	seen := map[string]bool{}
	ph.until(t, "PostStartHookError and CrashLoopBackOff shown", func() (bool, string) {
		cs := containerStatus(ph.podStatus(pod.UID), "app")
		if w := cs.State.Waiting; w != nil {
			seen[w.Reason] = true
		}
		return seen[ReasonPostStartHookError] && seen["CrashLoopBackOff"], fmt.Sprint(seen)
	})
}

func TestPreStopHookRunsBeforeStopAndIsBoundedByGrace(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	exec := newScriptedExec(srv)
	cutOff := make(chan struct{})
	exec.set("prestop", func(ctx context.Context, id string) int32 {
		<-ctx.Done() // hangs until cut off
		close(cutOff)
		return 1
	})
	ph := newProbeHarness(t, srv)
	pod := testPod("stopper", v1.RestartPolicyAlways, nil, "app")
	grace := int64(2)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"prestop"}}}}
	ph.m.Update(pod)
	var id string
	eventually(t, "app running", func() (bool, string) {
		c := ph.running(pod.UID, "app")
		if c != nil {
			id = c.GetId()
		}
		return c != nil, ""
	})
	ph.m.Remove(pod.UID)
	select {
	case <-cutOff:
	case <-time.After(15 * time.Second):
		t.Fatal("the hung preStop hook was not cut off")
	}
	eventually(t, "pod removed", func() (bool, string) {
		return len(ph.containers(pod.UID, "")) == 0 && !ph.m.Known(pod.UID), ""
	})
	if n := exec.count("prestop"); n != 1 {
		t.Errorf("preStop ran %d times, want 1", n)
	}
	// The hook used the whole grace period: the stop signal gets the minimum.
	if secs, ok := srv.LastStopTimeout(id); !ok || secs != 2 {
		t.Errorf("StopContainer timeout %d (%v), want the 2 s minimum left after the hook", secs, ok)
	}
	if !ph.events.has("Warning FailedPreStopHook " + probes.PreStopFailedMessage) {
		t.Errorf("no FailedPreStopHook event in %q", ph.events.list())
	}
}

func TestPreStopHookTimeCountsAgainstGrace(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	exec := newScriptedExec(srv)
	var stillRunning atomic.Bool
	ph := newProbeHarness(t, srv)
	exec.set("prestop", func(ctx context.Context, id string) int32 {
		// The container still runs while its preStop hook does.
		stillRunning.Store(ph.running("uid-graceful", "app") != nil)
		return 0
	})
	pod := testPod("graceful", v1.RestartPolicyAlways, nil, "app")
	grace := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"prestop"}}}}
	ph.m.Update(pod)
	var id string
	eventually(t, "app running", func() (bool, string) {
		c := ph.running(pod.UID, "app")
		if c != nil {
			id = c.GetId()
		}
		return c != nil, ""
	})
	ph.m.Remove(pod.UID)
	eventually(t, "pod removed", func() (bool, string) { return !ph.m.Known(pod.UID), "" })
	if exec.count("prestop") != 1 || !stillRunning.Load() {
		t.Errorf("preStop ran %d times, container running during it: %v; want once, before the stop", exec.count("prestop"), stillRunning.Load())
	}
	if secs, ok := srv.LastStopTimeout(id); !ok || secs > grace || secs < grace-2 {
		t.Errorf("StopContainer timeout %d (%v), want what remains of %d s", secs, ok, grace)
	}
}
