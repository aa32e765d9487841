package lifecycle

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/agent/backoff"
	"berth/agent/podstate"
	"berth/cri"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testPod(policy v1.RestartPolicy, inits []string, apps ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	pod.Spec.RestartPolicy = policy
	for _, n := range inits {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: n, Image: "busybox"})
	}
	for _, n := range apps {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: n, Image: "busybox"})
	}
	return pod
}

func hashOf(pod *v1.Pod, name string) uint64 {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return cri.ContainerHash(&list[i])
			}
		}
	}
	return 0
}

// rtBuilder assembles observed runtime state; each container added is newer
// than the ones before.
type rtBuilder struct {
	pod *v1.Pod
	rt  podstate.Pod
	n   int
}

func observe(pod *v1.Pod) *rtBuilder { return &rtBuilder{pod: pod, rt: podstate.Pod{UID: pod.UID}} }

func (b *rtBuilder) sandbox(id string, attempt uint32, ready bool, ips ...string) *rtBuilder {
	b.n++
	b.rt.Sandboxes = append(b.rt.Sandboxes, podstate.Sandbox{ID: id, Attempt: attempt, Ready: ready, IPs: ips, CreatedAt: t0.Add(time.Duration(b.n) * time.Second)})
	return b
}

func (b *rtBuilder) ctr(name string, state podstate.ContainerState, exit int32, restarts int) *rtBuilder {
	b.n++
	at := t0.Add(time.Duration(b.n) * time.Second)
	c := podstate.Container{ID: name + "-" + string(rune('0'+restarts)), Name: name, State: state, ExitCode: exit,
		RestartCount: restarts, Hash: hashOf(b.pod, name), CreatedAt: at, StartedAt: at}
	if state == podstate.ContainerExited {
		c.FinishedAt = at.Add(time.Second)
		if exit == 0 {
			c.Reason = "Completed"
		} else {
			c.Reason = "Error"
		}
	}
	b.rt.Containers = append(b.rt.Containers, c)
	return b
}

func (b *rtBuilder) hash(name string, h uint64) *rtBuilder {
	for i := range b.rt.Containers {
		if b.rt.Containers[i].Name == name {
			b.rt.Containers[i].Hash = h
		}
	}
	return b
}

func (b *rtBuilder) build() *podstate.Pod {
	rt := b.rt
	rt.Sort()
	return &rt
}

// want is a plan in names, for readable tables.
type want struct {
	killPod, createSandbox bool
	sandboxID              string
	attempt                uint32
	init                   string
	start                  []string
	restarts               []int // restart counts of start, when checked
	kill                   []string
	waiting                []string
}

func names(p Plan) (init string, start, kill, waiting []string, restarts []int) {
	if p.InitToStart != nil {
		init = p.InitToStart.Container.Name
	}
	for _, s := range p.ContainersToStart {
		start = append(start, s.Container.Name)
		restarts = append(restarts, s.RestartCount)
	}
	for _, k := range p.ContainersToKill {
		kill = append(kill, k.ID)
	}
	for n := range p.Waiting {
		waiting = append(waiting, n)
	}
	slices.Sort(waiting)
	return
}

func TestCompute(t *testing.T) {
	always := testPod(v1.RestartPolicyAlways, nil, "app", "side")
	never := testPod(v1.RestartPolicyNever, nil, "app")
	onFailure := testPod(v1.RestartPolicyOnFailure, nil, "app", "side")
	withInit := testPod(v1.RestartPolicyAlways, []string{"init1", "init2"}, "app")
	initNever := testPod(v1.RestartPolicyNever, []string{"init1"}, "app")
	hostNet := testPod(v1.RestartPolicyAlways, nil, "app")
	hostNet.Spec.HostNetwork = true

	tests := []struct {
		name string
		pod  *v1.Pod
		rt   *podstate.Pod
		want want
	}{
		{"new pod: sandbox and all containers", always, nil,
			want{killPod: true, createSandbox: true, start: []string{"app", "side"}, restarts: []int{0, 0}}},
		{"new pod with init: sandbox and first init only", withInit, nil,
			want{killPod: true, createSandbox: true, init: "init1"}},
		{"all running: nothing", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).build(),
			want{sandboxID: "s1"}},
		{"one missing: start it", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).build(),
			want{sandboxID: "s1", start: []string{"side"}, restarts: []int{0}}},
		{"exited under Always: restart with count+1", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerExited, 0, 2).ctr("side", podstate.ContainerRunning, 0, 0).build(),
			want{sandboxID: "s1", start: []string{"app"}, restarts: []int{3}}},
		{"OnFailure: exit 0 stays, exit 1 restarts", onFailure,
			observe(onFailure).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerExited, 0, 0).ctr("side", podstate.ContainerExited, 1, 0).build(),
			want{sandboxID: "s1", start: []string{"side"}, restarts: []int{1}}},
		{"OnFailure: all succeeded: pod done, kill (stop sandbox)", onFailure,
			observe(onFailure).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerExited, 0, 0).ctr("side", podstate.ContainerExited, 0, 0).build(),
			want{killPod: true, sandboxID: "s1"}},
		{"Never: failed container is not restarted, pod killed", never,
			observe(never).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerExited, 1, 0).build(),
			want{killPod: true, sandboxID: "s1"}},
		{"Never: stopped sandbox of a finished pod is not recreated", never,
			observe(never).sandbox("s1", 0, false).ctr("app", podstate.ContainerExited, 1, 0).build(),
			want{killPod: true, sandboxID: "s1", attempt: 1}},
		{"Always: dead sandbox recreated with attempt+1, containers restarted", always,
			observe(always).sandbox("s1", 0, false).ctr("app", podstate.ContainerExited, 137, 0).ctr("side", podstate.ContainerExited, 137, 4).build(),
			want{killPod: true, createSandbox: true, sandboxID: "s1", attempt: 1, start: []string{"app", "side"}, restarts: []int{1, 5}}},
		{"OnFailure: new sandbox skips succeeded containers", onFailure,
			observe(onFailure).sandbox("s1", 0, false).ctr("app", podstate.ContainerExited, 0, 0).ctr("side", podstate.ContainerExited, 2, 0).build(),
			want{killPod: true, createSandbox: true, sandboxID: "s1", attempt: 1, start: []string{"side"}}},
		{"sandbox without IP is recreated", always,
			observe(always).sandbox("s1", 0, true).ctr("app", podstate.ContainerRunning, 0, 0).build(),
			want{killPod: true, createSandbox: true, sandboxID: "s1", attempt: 1, start: []string{"app", "side"}}},
		{"host-network sandbox needs no IP", hostNet,
			observe(hostNet).sandboxHost("s1").ctr("app", podstate.ContainerRunning, 0, 0).build(),
			want{sandboxID: "s1"}},
		{"network mode changed: new sandbox", hostNet,
			observe(hostNet).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).build(),
			want{killPod: true, createSandbox: true, sandboxID: "s1", attempt: 1, start: []string{"app"}}},
		{"two ready sandboxes: start over", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").sandbox("s2", 1, true, "10.0.0.3").build(),
			want{killPod: true, createSandbox: true, sandboxID: "s2", attempt: 2, start: []string{"app", "side"}}},
		{"spec changed: kill and start again", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).hash("app", 42).build(),
			want{sandboxID: "s1", kill: []string{"app-0"}, start: []string{"app"}, restarts: []int{1}}},
		{"unknown state: kill and restart", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerUnknown, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).build(),
			want{sandboxID: "s1", kill: []string{"app-0"}, start: []string{"app"}}},
		{"created but never started: start again", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerCreated, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).build(),
			want{sandboxID: "s1", start: []string{"app"}}},
		{"container not in spec is killed", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).ctr("gone", podstate.ContainerRunning, 0, 0).build(),
			want{sandboxID: "s1", kill: []string{"gone-0"}}},
		{"init: first done, run the second", withInit,
			observe(withInit).sandbox("s1", 0, true, "10.0.0.2").ctr("init1", podstate.ContainerExited, 0, 0).build(),
			want{sandboxID: "s1", init: "init2"}},
		{"init: one running, wait", withInit,
			observe(withInit).sandbox("s1", 0, true, "10.0.0.2").ctr("init1", podstate.ContainerExited, 0, 0).ctr("init2", podstate.ContainerRunning, 0, 0).build(),
			want{sandboxID: "s1"}},
		{"init: all done, app starts", withInit,
			observe(withInit).sandbox("s1", 0, true, "10.0.0.2").ctr("init1", podstate.ContainerExited, 0, 0).ctr("init2", podstate.ContainerExited, 0, 0).build(),
			want{sandboxID: "s1", start: []string{"app"}}},
		{"init failed under Always: restart it, app blocked", withInit,
			observe(withInit).sandbox("s1", 0, true, "10.0.0.2").ctr("init1", podstate.ContainerExited, 0, 0).ctr("init2", podstate.ContainerExited, 3, 1).build(),
			want{sandboxID: "s1", init: "init2"}},
		{"init failed under Never: kill the pod, app never starts", initNever,
			observe(initNever).sandbox("s1", 0, true, "10.0.0.2").ctr("init1", podstate.ContainerExited, 1, 0).build(),
			want{killPod: true, sandboxID: "s1"}},
		{"init: app already running means initialized", withInit,
			observe(withInit).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).build(),
			want{sandboxID: "s1"}},
		{"init: new sandbox restarts from the first init container", withInit,
			observe(withInit).sandbox("s1", 0, false).ctr("init1", podstate.ContainerExited, 0, 0).ctr("init2", podstate.ContainerExited, 0, 0).ctr("app", podstate.ContainerExited, 137, 0).build(),
			want{killPod: true, createSandbox: true, sandboxID: "s1", attempt: 1, init: "init1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(Input{Pod: tc.pod, Runtime: tc.rt, Now: t0.Add(time.Hour)})
			init, start, kill, waiting, restarts := names(p)
			if p.KillPod != tc.want.killPod || p.CreateSandbox != tc.want.createSandbox {
				t.Errorf("KillPod=%v CreateSandbox=%v, want %v %v", p.KillPod, p.CreateSandbox, tc.want.killPod, tc.want.createSandbox)
			}
			if p.SandboxID != tc.want.sandboxID || p.Attempt != tc.want.attempt {
				t.Errorf("SandboxID=%q Attempt=%d, want %q %d", p.SandboxID, p.Attempt, tc.want.sandboxID, tc.want.attempt)
			}
			if init != tc.want.init {
				t.Errorf("InitToStart=%q, want %q", init, tc.want.init)
			}
			if !slices.Equal(start, tc.want.start) {
				t.Errorf("ContainersToStart=%v, want %v", start, tc.want.start)
			}
			if tc.want.restarts != nil && !slices.Equal(restarts, tc.want.restarts) {
				t.Errorf("restart counts=%v, want %v", restarts, tc.want.restarts)
			}
			if !slices.Equal(kill, tc.want.kill) {
				t.Errorf("ContainersToKill=%v, want %v", kill, tc.want.kill)
			}
			if !slices.Equal(waiting, tc.want.waiting) {
				t.Errorf("Waiting=%v, want %v", waiting, tc.want.waiting)
			}
		})
	}
}

func (b *rtBuilder) sandboxHost(id string) *rtBuilder {
	b.sandbox(id, 0, true)
	b.rt.Sandboxes[len(b.rt.Sandboxes)-1].HostNetwork = true
	return b
}

// A crashing container is held back while its back-off lasts, with upstream's
// reason and message, and starts once it has passed.
func TestComputeBackOff(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "app")
	rt := observe(pod).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerExited, 1, 1).build()
	exited := rt.Containers[0].FinishedAt
	tr := backoff.New(backoff.DefaultPolicy())
	key := backoff.Key(string(pod.UID), "app", cri.ContainerHash(&pod.Spec.Containers[0]))
	tr.Next(key, exited.Add(-time.Minute)) // a previous restart, so this exit is backed off 20 s
	tr.Next(key, exited.Add(-30*time.Second))

	p := Compute(Input{Pod: pod, Runtime: rt, BackOff: tr, Now: exited.Add(5 * time.Second)})
	if len(p.ContainersToStart) != 0 {
		t.Fatalf("started %d containers during back-off", len(p.ContainersToStart))
	}
	w, ok := p.Waiting["app"]
	if !ok || w.Reason != ReasonCrashLoopBackOff {
		t.Fatalf("Waiting = %+v, want CrashLoopBackOff for app", p.Waiting)
	}
	if !strings.Contains(w.Message, "back-off 20s restarting failed container=app pod=web_default(uid-1)") {
		t.Fatalf("message %q", w.Message)
	}
	if !p.RetryAt.Equal(exited.Add(20*time.Second)) || !w.Until.Equal(p.RetryAt) {
		t.Fatalf("RetryAt=%v Until=%v, want %v", p.RetryAt, w.Until, exited.Add(20*time.Second))
	}
	if p.KillPod {
		t.Fatal("a container in back-off must not get its pod killed")
	}

	p = Compute(Input{Pod: pod, Runtime: rt, BackOff: tr, Now: exited.Add(20 * time.Second)})
	if len(p.ContainersToStart) != 1 || len(p.Waiting) != 0 {
		t.Fatalf("after the back-off: start=%d waiting=%v", len(p.ContainersToStart), p.Waiting)
	}
	s := p.ContainersToStart[0]
	if s.BackOffKey != key || !s.BackOffSince.Equal(exited) || s.RestartCount != 2 {
		t.Fatalf("start = %+v, want key %s since %v restart 2", s, key, exited)
	}
}

// The first exit restarts at once (no history), as upstream.
func TestComputeFirstRestartImmediate(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, []string{"init"}, "app")
	rt := observe(pod).sandbox("s1", 0, true, "10.0.0.2").ctr("init", podstate.ContainerExited, 1, 0).build()
	tr := backoff.New(backoff.DefaultPolicy())
	p := Compute(Input{Pod: pod, Runtime: rt, BackOff: tr, Now: rt.Containers[0].FinishedAt})
	if p.InitToStart == nil || p.InitToStart.Container.Name != "init" || p.InitToStart.RestartCount != 1 {
		t.Fatalf("InitToStart = %+v, want init restart 1", p.InitToStart)
	}
	tr.Next(p.InitToStart.BackOffKey, p.InitToStart.BackOffSince)
	// It fails again right away: now it waits.
	rt2 := observe(pod).sandbox("s1", 0, true, "10.0.0.2").ctr("init", podstate.ContainerExited, 1, 0).ctr("init", podstate.ContainerExited, 1, 1).build()
	p = Compute(Input{Pod: pod, Runtime: rt2, BackOff: tr, Now: rt2.Containers[0].FinishedAt})
	if p.InitToStart != nil || p.Waiting["init"].Reason != ReasonCrashLoopBackOff {
		t.Fatalf("second failure: InitToStart=%v Waiting=%v, want back-off", p.InitToStart, p.Waiting)
	}
	if len(p.ContainersToStart) != 0 {
		t.Fatal("app container started while init is failing")
	}
}
