package status

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/agent/podstate"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func pod(policy v1.RestartPolicy, inits []string, apps ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	p.Spec.RestartPolicy = policy
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "busybox"})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "busybox"})
	}
	return p
}

type obs struct {
	rt podstate.Pod
	n  int
}

func runtimeOf(sandboxReady bool, ip string) *obs {
	o := &obs{}
	s := podstate.Sandbox{ID: "s1", Ready: sandboxReady, CreatedAt: t0}
	if ip != "" {
		s.IPs = []string{ip}
	}
	o.rt.Sandboxes = []podstate.Sandbox{s}
	return o
}

func (o *obs) c(name string, state podstate.ContainerState, exit int32, reason string, restarts int) *obs {
	o.n++
	at := t0.Add(time.Duration(o.n) * time.Second)
	c := podstate.Container{ID: name + string(rune('0'+restarts)), Name: name, State: state, ExitCode: exit, Reason: reason,
		RestartCount: restarts, CreatedAt: at, StartedAt: at, ImageRef: "sha256:abc"}
	if state == podstate.ContainerExited {
		c.FinishedAt = at.Add(time.Second)
	}
	o.rt.Containers = append(o.rt.Containers, c)
	return o
}

func (o *obs) done() *podstate.Pod { r := o.rt; r.Sort(); return &r }

func condOf(st v1.PodStatus, t v1.PodConditionType) v1.PodCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.PodCondition{}
}

func TestComputePhaseAndConditions(t *testing.T) {
	always := pod(v1.RestartPolicyAlways, nil, "app")
	never := pod(v1.RestartPolicyNever, nil, "app")
	onFailure := pod(v1.RestartPolicyOnFailure, nil, "app")
	withInit := pod(v1.RestartPolicyAlways, []string{"init"}, "app")
	initNever := pod(v1.RestartPolicyNever, []string{"init"}, "app")
	tests := []struct {
		name     string
		pod      *v1.Pod
		rt       *podstate.Pod
		failures map[string]Failure
		phase    v1.PodPhase
		// conditions: ready-to-start, initialized, ready (ContainersReady is the same)
		sandbox, initialized, ready v1.ConditionStatus
		readyReason                 string
	}{
		{"nothing yet", always, nil, nil, v1.PodPending, "False", "True", "False", ReasonContainersNotReady},
		{"sandbox up, container creating", always, runtimeOf(true, "10.1.0.2").done(), nil, v1.PodPending, "True", "True", "False", ReasonContainersNotReady},
		{"running", always, runtimeOf(true, "10.1.0.2").c("app", podstate.ContainerRunning, 0, "", 0).done(), nil, v1.PodRunning, "True", "True", "True", ""},
		{"crash looping under Always stays Running", always,
			runtimeOf(true, "10.1.0.2").c("app", podstate.ContainerExited, 1, "Error", 3).done(),
			map[string]Failure{"app": {"CrashLoopBackOff", "back-off 40s"}}, v1.PodRunning, "True", "True", "False", ReasonContainersNotReady},
		{"Never, exit 1: Failed", never, runtimeOf(false, "").c("app", podstate.ContainerExited, 1, "Error", 0).done(), nil, v1.PodFailed, "False", "True", "False", ReasonContainersNotReady},
		{"Never, exit 0: Succeeded", never, runtimeOf(false, "").c("app", podstate.ContainerExited, 0, "Completed", 0).done(), nil, v1.PodSucceeded, "False", "True", "False", ReasonPodCompleted},
		{"OnFailure, exit 0: Succeeded", onFailure, runtimeOf(false, "").c("app", podstate.ContainerExited, 0, "Completed", 0).done(), nil, v1.PodSucceeded, "False", "True", "False", ReasonPodCompleted},
		{"OnFailure, exit 2: Running (restarting)", onFailure, runtimeOf(true, "10.1.0.2").c("app", podstate.ContainerExited, 2, "Error", 0).done(), nil, v1.PodRunning, "True", "True", "False", ReasonContainersNotReady},
		{"init running: Pending, not initialized", withInit, runtimeOf(true, "10.1.0.2").c("init", podstate.ContainerRunning, 0, "", 0).done(), nil, v1.PodPending, "True", "False", "False", ReasonContainersNotReady},
		{"init failing under Always: Pending", withInit, runtimeOf(true, "10.1.0.2").c("init", podstate.ContainerExited, 1, "Error", 2).done(),
			map[string]Failure{"init": {"CrashLoopBackOff", "back-off"}}, v1.PodPending, "True", "False", "False", ReasonContainersNotReady},
		{"init failed under Never: Failed", initNever, runtimeOf(false, "").c("init", podstate.ContainerExited, 1, "Error", 0).done(), nil, v1.PodFailed, "False", "False", "False", ReasonContainersNotReady},
		{"init done, app running", withInit, runtimeOf(true, "10.1.0.2").c("init", podstate.ContainerExited, 0, "Completed", 0).c("app", podstate.ContainerRunning, 0, "", 0).done(), nil, v1.PodRunning, "True", "True", "True", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := Compute(Input{Pod: tc.pod, Runtime: tc.rt, Failures: tc.failures, Now: t0.Add(time.Hour), HostIP: "192.168.1.5", QOSClass: v1.PodQOSBestEffort})
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			if c := condOf(st, v1.PodReadyToStartContainers); c.Status != tc.sandbox {
				t.Errorf("PodReadyToStartContainers %s, want %s", c.Status, tc.sandbox)
			}
			if c := condOf(st, v1.PodInitialized); c.Status != tc.initialized {
				t.Errorf("Initialized %s (%s), want %s", c.Status, c.Message, tc.initialized)
			}
			r, cr := condOf(st, v1.PodReady), condOf(st, v1.ContainersReady)
			if r.Status != tc.ready || cr.Status != tc.ready || r.Reason != tc.readyReason || cr.Reason != tc.readyReason {
				t.Errorf("Ready %s/%s ContainersReady %s/%s, want %s/%s", r.Status, r.Reason, cr.Status, cr.Reason, tc.ready, tc.readyReason)
			}
			if len(st.Conditions) != 4 {
				t.Errorf("%d conditions, want 4", len(st.Conditions))
			}
			if st.HostIP != "192.168.1.5" || st.QOSClass != v1.PodQOSBestEffort || st.StartTime == nil {
				t.Errorf("hostIP %q qos %q startTime %v", st.HostIP, st.QOSClass, st.StartTime)
			}
		})
	}
}

func TestComputeContainerStates(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, []string{"init"}, "b", "a")
	rt := runtimeOf(true, "10.1.0.7").
		c("init", podstate.ContainerExited, 0, "Completed", 0).
		c("a", podstate.ContainerExited, 137, "OOMKilled", 0).
		c("a", podstate.ContainerRunning, 0, "", 1).
		c("b", podstate.ContainerExited, 1, "Error", 4).done()
	rt.Containers[0].Message = "bye" // b's termination message
	st := Compute(Input{Pod: p, Runtime: rt, RuntimeName: "containerd", Now: t0.Add(time.Hour),
		Failures: map[string]Failure{"b": {Reason: "CrashLoopBackOff", Message: "back-off 1m20s restarting failed container=b"}, "init": {Reason: "CrashLoopBackOff"}}})

	if st.PodIP != "10.1.0.7" || len(st.PodIPs) != 1 || st.PodIPs[0].IP != "10.1.0.7" {
		t.Fatalf("podIP %q podIPs %v", st.PodIP, st.PodIPs)
	}
	if len(st.ContainerStatuses) != 2 || st.ContainerStatuses[0].Name != "a" || st.ContainerStatuses[1].Name != "b" {
		t.Fatalf("container statuses not sorted by name: %+v", st.ContainerStatuses)
	}
	a, b := st.ContainerStatuses[0], st.ContainerStatuses[1]
	if a.State.Running == nil || !a.Ready || a.RestartCount != 1 || a.ContainerID != "containerd://a1" || a.ImageID != "sha256:abc" {
		t.Errorf("a = %+v, want running, ready, restart 1", a)
	}
	if lt := a.LastTerminationState.Terminated; lt == nil || lt.Reason != "OOMKilled" || lt.ExitCode != 137 {
		t.Errorf("a lastState = %+v, want OOMKilled 137", a.LastTerminationState)
	}
	if w := b.State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" || w.Message != "back-off 1m20s restarting failed container=b" {
		t.Errorf("b state = %+v, want waiting CrashLoopBackOff", b.State)
	}
	if lt := b.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 || lt.Reason != "Error" || lt.Message != "bye" {
		t.Errorf("b lastState = %+v, want terminated 1 Error bye", b.LastTerminationState)
	}
	if b.Ready || b.RestartCount != 4 {
		t.Errorf("b ready %v restarts %d", b.Ready, b.RestartCount)
	}
	// A completed init container keeps its terminated state despite a stale failure.
	if len(st.InitContainerStatuses) != 1 || st.InitContainerStatuses[0].State.Terminated == nil ||
		st.InitContainerStatuses[0].State.Terminated.Reason != "Completed" || st.InitContainerStatuses[0].Ready {
		t.Errorf("init status = %+v", st.InitContainerStatuses)
	}
}

func TestComputeDefaultWaitingReasons(t *testing.T) {
	st := Compute(Input{Pod: pod(v1.RestartPolicyAlways, nil, "app"), Now: t0})
	if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != ReasonContainerCreating {
		t.Errorf("without init containers: %+v, want ContainerCreating", st.ContainerStatuses[0].State)
	}
	st = Compute(Input{Pod: pod(v1.RestartPolicyAlways, []string{"i"}, "app"), Now: t0})
	if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != ReasonPodInitializing {
		t.Errorf("with init containers: %+v, want PodInitializing", st.ContainerStatuses[0].State)
	}
	if w := st.InitContainerStatuses[0].State.Waiting; w == nil || w.Reason != ReasonPodInitializing {
		t.Errorf("init container: %+v, want PodInitializing", st.InitContainerStatuses[0].State)
	}
	if c := condOf(st, v1.PodInitialized); c.Reason != ReasonContainersNotInitialized || c.Message != "containers with incomplete status: [i]" {
		t.Errorf("Initialized = %+v", c)
	}
	st = Compute(Input{Pod: pod(v1.RestartPolicyAlways, nil, "app"), Now: t0,
		Failures: map[string]Failure{"app": {Reason: "ErrImagePull", Message: "cri PullImage: not found"}}})
	if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ErrImagePull" || w.Message != "cri PullImage: not found" {
		t.Errorf("pull failure: %+v", st.ContainerStatuses[0].State)
	}
}

func TestComputeKeepsTransitionTimesAndTerminalPhase(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, nil, "app")
	running := runtimeOf(true, "10.1.0.2").c("app", podstate.ContainerRunning, 0, "", 0).done()
	first := Compute(Input{Pod: p, Runtime: running, Now: t0})
	second := Compute(Input{Pod: p, Runtime: running, Old: &first, Now: t0.Add(time.Minute)})
	for _, c := range second.Conditions {
		if !c.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s moved its lastTransitionTime to %v without a change", c.Type, c.LastTransitionTime)
		}
	}
	if !second.StartTime.Time.Equal(t0) {
		t.Errorf("startTime changed to %v", second.StartTime)
	}
	crashed := runtimeOf(true, "10.1.0.2").c("app", podstate.ContainerExited, 1, "Error", 0).done()
	third := Compute(Input{Pod: p, Runtime: crashed, Old: &second, Now: t0.Add(2 * time.Minute)})
	if c := condOf(third, v1.PodReady); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("Ready after a crash = %+v", c)
	}

	restarted := p.DeepCopy()
	restarted.Status.StartTime = &metav1.Time{Time: t0.Add(-time.Hour)}
	if st := Compute(Input{Pod: restarted, Runtime: running, Now: t0}); !st.StartTime.Time.Equal(t0.Add(-time.Hour)) {
		t.Errorf("without a previous status, startTime %v, want the apiserver's %v", st.StartTime, t0.Add(-time.Hour))
	}

	failed := v1.PodStatus{Phase: v1.PodFailed}
	st := Compute(Input{Pod: p, Runtime: running, Old: &failed, Now: t0})
	if st.Phase != v1.PodFailed {
		t.Errorf("phase left Failed for %s", st.Phase)
	}
}

func TestHostNetworkPodIPIsHostIP(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, nil, "app")
	p.Spec.HostNetwork = true
	rt := runtimeOf(true, "").done()
	rt.Sandboxes[0].HostNetwork = true
	st := Compute(Input{Pod: p, Runtime: rt, HostIP: "192.168.1.5", Now: t0})
	if st.PodIP != "192.168.1.5" {
		t.Errorf("podIP %q, want the host IP", st.PodIP)
	}
	if c := condOf(st, v1.PodReadyToStartContainers); c.Status != v1.ConditionTrue {
		t.Errorf("host-network sandbox not ready to start containers: %+v", c)
	}
}

// TestComputeRejected: a pod the agent ended itself (its active deadline
// passed) is Failed with the reason and message given, which stay.
func TestComputeRejected(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, nil, "app")
	running := runtimeOf(true, "10.1.0.2").c("app", podstate.ContainerRunning, 0, "", 0).done()
	why := &Failure{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}
	st := Compute(Input{Pod: p, Runtime: running, Now: t0, Rejected: why})
	if st.Phase != v1.PodFailed || st.Reason != why.Reason || st.Message != why.Message {
		t.Fatalf("status phase=%s reason=%q message=%q, want Failed %q %q", st.Phase, st.Reason, st.Message, why.Reason, why.Message)
	}
	killed := runtimeOf(false, "10.1.0.2").c("app", podstate.ContainerExited, 137, "Error", 0).done()
	next := Compute(Input{Pod: p, Runtime: killed, Old: &st, Now: t0.Add(time.Second)})
	if next.Phase != v1.PodFailed || next.Reason != why.Reason || next.Message != why.Message {
		t.Fatalf("next status phase=%s reason=%q message=%q: the terminal phase and its reason must stay", next.Phase, next.Reason, next.Message)
	}
	if plain := Compute(Input{Pod: p, Runtime: running, Now: t0}); plain.Phase != v1.PodRunning || plain.Reason != "" {
		t.Fatalf("without a rejection: phase=%s reason=%q", plain.Phase, plain.Reason)
	}
}

// TestReadinessGates: with every container ready, Ready waits for the
// conditions of the pod's readiness gates (set by others) to be True, with
// upstream's reason and message; ContainersReady does not.
func TestReadinessGates(t *testing.T) {
	running := runtimeOf(true, "10.1.0.2").c("app", podstate.ContainerRunning, 0, "", 0).done()
	p := pod(v1.RestartPolicyAlways, nil, "app")
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/a"}, {ConditionType: "example.com/b"}}
	for _, tc := range []struct {
		name    string
		conds   []v1.PodCondition
		ready   bool
		message string
	}{
		{"no conditions", nil, false, `corresponding condition of pod readiness gate "example.com/a" does not exist., corresponding condition of pod readiness gate "example.com/b" does not exist.`},
		{"one True, one False", []v1.PodCondition{{Type: "example.com/a", Status: v1.ConditionTrue}, {Type: "example.com/b", Status: v1.ConditionFalse}}, false,
			`the status of pod readiness gate "example.com/b" is not "True", but False`},
		{"both True", []v1.PodCondition{{Type: "example.com/a", Status: v1.ConditionTrue}, {Type: "example.com/b", Status: v1.ConditionTrue}}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := p.DeepCopy()
			p.Status.Conditions = tc.conds
			st := Compute(Input{Pod: p, Runtime: running, Now: t0})
			r, cr := condOf(st, v1.PodReady), condOf(st, v1.ContainersReady)
			if cr.Status != v1.ConditionTrue {
				t.Errorf("ContainersReady = %+v, want True", cr)
			}
			if (r.Status == v1.ConditionTrue) != tc.ready || r.Message != tc.message {
				t.Fatalf("Ready = %+v, want ready=%v message %q", r, tc.ready, tc.message)
			}
			if !tc.ready && r.Reason != ReasonReadinessGatesNotReady {
				t.Errorf("Ready reason %q", r.Reason)
			}
		})
	}
}

// The status and the agent's conditions carry the generation of the spec
// they were computed from.
func TestComputeObservedGeneration(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, nil, "app")
	p.Generation = 3
	st := Compute(Input{Pod: p, Runtime: runtimeOf(true, "10.0.0.2").c("app", podstate.ContainerRunning, 0, "", 0).done(), Now: t0})
	if st.ObservedGeneration != 3 {
		t.Errorf("observedGeneration %d, want 3", st.ObservedGeneration)
	}
	for _, c := range st.Conditions {
		if c.ObservedGeneration != 3 {
			t.Errorf("condition %s observedGeneration %d, want 3", c.Type, c.ObservedGeneration)
		}
	}
}

// TestComputeTerminal: a pod stopped for good ends Succeeded only when every
// container exited 0, else Failed, whatever its restart policy (the
// kubelet's phase for a terminated pod); without Terminal the restart
// policy decides as before.
func TestComputeTerminal(t *testing.T) {
	cases := []struct {
		name   string
		policy v1.RestartPolicy
		exits  []int32
		want   v1.PodPhase
	}{
		{"killed, restart Always", v1.RestartPolicyAlways, []int32{137}, v1.PodFailed},
		{"all exited 0, restart Always", v1.RestartPolicyAlways, []int32{0, 0}, v1.PodSucceeded},
		{"one killed of two, restart OnFailure", v1.RestartPolicyOnFailure, []int32{0, 143}, v1.PodFailed},
		{"killed, restart Never", v1.RestartPolicyNever, []int32{137}, v1.PodFailed},
	}
	for _, tc := range cases {
		names := []string{"a", "b"}[:len(tc.exits)]
		p := pod(tc.policy, nil, names...)
		rt := runtimeOf(false, "10.1.0.2")
		for i, code := range tc.exits {
			rt = rt.c(names[i], podstate.ContainerExited, code, "Error", 0)
		}
		st := Compute(Input{Pod: p, Runtime: rt.done(), Now: t0, Terminal: true})
		if st.Phase != tc.want {
			t.Errorf("%s: phase %s, want %s", tc.name, st.Phase, tc.want)
		}
	}
	p := pod(v1.RestartPolicyAlways, nil, "a")
	killed := runtimeOf(false, "10.1.0.2").c("a", podstate.ContainerExited, 137, "Error", 0).done()
	if st := Compute(Input{Pod: p, Runtime: killed, Now: t0}); st.Phase != v1.PodRunning {
		t.Errorf("not terminal, restart Always: phase %s, want Running (restarting)", st.Phase)
	}
}
