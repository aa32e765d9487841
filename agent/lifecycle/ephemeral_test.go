package lifecycle

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"berth/agent/podstate"
)

// withDebug adds ephemeral containers to a copy of pod; "name>target"
// targets a container.
func withDebug(pod *v1.Pod, specs ...string) *v1.Pod {
	pod = pod.DeepCopy()
	for _, s := range specs {
		name, target, _ := strings.Cut(s, ">")
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: "busybox"},
			TargetContainerName:      target,
		})
	}
	return pod
}

func TestComputeEphemeral(t *testing.T) {
	always := withDebug(testPod(v1.RestartPolicyAlways, nil, "app"), "debug")
	targeted := withDebug(testPod(v1.RestartPolicyAlways, nil, "app"), "debug>app")
	missing := withDebug(testPod(v1.RestartPolicyAlways, nil, "app"), "debug>nope")
	two := withDebug(testPod(v1.RestartPolicyAlways, nil, "app"), "debug", "debug2")
	initPod := withDebug(testPod(v1.RestartPolicyAlways, []string{"init1"}, "app"), "debug")
	never := withDebug(testPod(v1.RestartPolicyNever, nil, "app"), "debug")

	type ephemeral struct{ name, target, missing string }
	tests := []struct {
		name      string
		pod       *v1.Pod
		rt        *podstate.Pod
		ephemeral []ephemeral
		start     []string
		init      string
		kill      []string
		killPod   bool
	}{
		{"added to a running pod: started", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).build(),
			[]ephemeral{{name: "debug"}}, nil, "", nil, false},
		{"running: nothing, and not killed as unknown", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("debug", podstate.ContainerRunning, 0, 0).build(),
			nil, nil, "", nil, false},
		{"exited: never restarted", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("debug", podstate.ContainerExited, 1, 0).build(),
			nil, nil, "", nil, false},
		{"created but not started: not started again", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("debug", podstate.ContainerCreated, 0, 0).build(),
			nil, nil, "", nil, false},
		{"target: joins the target's process namespace", targeted,
			observe(targeted).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).build(),
			[]ephemeral{{name: "debug", target: "app-0"}}, nil, "", nil, false},
		{"target the runtime does not hold: marked missing", missing,
			observe(missing).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).build(),
			[]ephemeral{{name: "debug", missing: "nope"}}, nil, "", nil, false},
		{"second added: only it starts, in spec order", two,
			observe(two).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("debug", podstate.ContainerRunning, 0, 0).build(),
			[]ephemeral{{name: "debug2"}}, nil, "", nil, false},
		{"with the app restarting: both", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerExited, 1, 0).build(),
			[]ephemeral{{name: "debug"}}, []string{"app"}, "", nil, false},
		{"during initialization: started with the init container", initPod,
			observe(initPod).sandbox("s1", 0, true, "10.0.0.2").ctr("init1", podstate.ContainerRunning, 0, 0).build(),
			[]ephemeral{{name: "debug"}}, nil, "", nil, false},
		{"new sandbox: none", always,
			observe(always).sandbox("s1", 0, false).ctr("app", podstate.ContainerExited, 137, 0).build(),
			nil, []string{"app"}, "", nil, true},
		{"pod finished (killed): none", never,
			observe(never).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerExited, 0, 0).build(),
			nil, nil, "", nil, true},
		{"the only running container does not keep a finished pod", never,
			observe(never).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerExited, 0, 0).ctr("debug", podstate.ContainerRunning, 0, 0).build(),
			nil, nil, "", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(Input{Pod: tc.pod, Runtime: tc.rt, Now: t0})
			var got []ephemeral
			for _, s := range p.EphemeralToStart {
				if !s.Ephemeral || s.Init || s.RestartCount != 0 {
					t.Errorf("start %+v: want a first ephemeral start", s)
				}
				got = append(got, ephemeral{s.Container.Name, s.TargetID, s.TargetMissing})
			}
			if !slices.Equal(got, tc.ephemeral) {
				t.Errorf("ephemeral starts %v, want %v", got, tc.ephemeral)
			}
			init, start, kill, _, _ := names(p)
			if init != tc.init || !slices.Equal(start, tc.start) || !slices.Equal(kill, tc.kill) || p.KillPod != tc.killPod {
				t.Errorf("init %q start %v kill %v killPod %v; want %q %v %v %v", init, start, kill, p.KillPod, tc.init, tc.start, tc.kill, tc.killPod)
			}
			if p.Empty() != (len(tc.ephemeral) == 0 && len(tc.start) == 0 && tc.init == "" && !tc.killPod && len(tc.kill) == 0 && !p.CreateSandbox) {
				t.Errorf("Empty() = %v", p.Empty())
			}
		})
	}
}
