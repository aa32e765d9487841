package lifecycle

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/agent/backoff"
	"berth/agent/podstate"
	"berth/probes"
)

func TestComputeKillsContainersFailingTheirProbes(t *testing.T) {
	always := testPod(v1.RestartPolicyAlways, nil, "app", "side")
	never := testPod(v1.RestartPolicyNever, nil, "app")
	onFailure := testPod(v1.RestartPolicyOnFailure, nil, "app")
	podGrace, probeGrace := int64(30), int64(5)
	graced := testPod(v1.RestartPolicyAlways, nil, "app")
	graced.Spec.TerminationGracePeriodSeconds = &podGrace
	graced.Spec.Containers[0].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: &probeGrace}

	failing := func(ids map[string]probes.ProbeType) func(string) (probes.ProbeType, bool) {
		return func(id string) (probes.ProbeType, bool) { t, ok := ids[id]; return t, ok }
	}
	tests := []struct {
		name      string
		pod       *v1.Pod
		rt        *podstate.Pod
		unhealthy map[string]probes.ProbeType
		wantKill  []string
		wantMsg   string
		wantGrace time.Duration
		wantStart []string
		restarts  []int
		killPod   bool
	}{
		{"liveness failure: killed and restarted", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).build(),
			map[string]probes.ProbeType{"app-0": probes.Liveness},
			[]string{"app-0"}, "Container app failed liveness probe, will be restarted", 2 * time.Second, []string{"app"}, []int{1}, false},
		{"startup failure: killed and restarted", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).build(),
			map[string]probes.ProbeType{"side-0": probes.Startup},
			[]string{"side-0"}, "Container side failed startup probe, will be restarted", 2 * time.Second, []string{"side"}, []int{1}, false},
		{"OnFailure restarts too", onFailure,
			observe(onFailure).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).build(),
			map[string]probes.ProbeType{"app-0": probes.Liveness},
			[]string{"app-0"}, "Container app failed liveness probe, will be restarted", 2 * time.Second, []string{"app"}, []int{1}, false},
		{"Never: killed, not restarted, the pod is killed", never,
			observe(never).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).build(),
			map[string]probes.ProbeType{"app-0": probes.Liveness},
			[]string{"app-0"}, "Container app failed liveness probe", 2 * time.Second, nil, nil, true},
		{"the probe's terminationGracePeriodSeconds", graced,
			observe(graced).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).build(),
			map[string]probes.ProbeType{"app-0": probes.Liveness},
			[]string{"app-0"}, "Container app failed liveness probe, will be restarted", 5 * time.Second, []string{"app"}, []int{1}, false},
		{"healthy containers are kept", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).build(),
			map[string]probes.ProbeType{"gone-0": probes.Liveness},
			nil, "", 0, nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := Compute(Input{Pod: tt.pod, Runtime: tt.rt, Now: t0, Unhealthy: failing(tt.unhealthy)})
			_, start, kill, _, restarts := names(plan)
			if !slices.Equal(kill, tt.wantKill) || !slices.Equal(start, tt.wantStart) || !slices.Equal(restarts, tt.restarts) || plan.KillPod != tt.killPod {
				t.Fatalf("plan kill %v start %v (restarts %v) killPod %v; want %v %v (%v) %v", kill, start, restarts, plan.KillPod, tt.wantKill, tt.wantStart, tt.restarts, tt.killPod)
			}
			if len(tt.wantKill) == 0 {
				return
			}
			k := plan.ContainersToKill[0]
			if k.Message != tt.wantMsg || k.GracePeriod != tt.wantGrace {
				t.Errorf("kill = %+v, want message %q, grace %v", k, tt.wantMsg, tt.wantGrace)
			}
		})
	}
}

func TestComputeProbeRestartWaitsOutPreviousBackOff(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "app")
	rt := observe(pod).sandbox("s1", 0, true, "10.0.0.2").
		ctr("app", podstate.ContainerExited, 137, 0).ctr("app", podstate.ContainerRunning, 0, 1).build()
	prev := rt.Previous("app")
	tracker := backoff.New(backoff.Policy{Initial: 10 * time.Second, Max: time.Minute, ResetAfter: 10 * time.Minute})
	key := backoff.Key(string(pod.UID), "app", hashOf(pod, "app"))
	tracker.Next(key, prev.FinishedAt) // the previous exit started a back-off
	plan := Compute(Input{Pod: pod, Runtime: rt, BackOff: tracker, Now: prev.FinishedAt.Add(time.Second),
		Unhealthy: func(id string) (probes.ProbeType, bool) { return probes.Liveness, id == "app-1" }})
	if len(plan.ContainersToKill) != 1 || plan.ContainersToKill[0].ID != "app-1" {
		t.Fatalf("kill %+v, want app-1", plan.ContainersToKill)
	}
	if len(plan.ContainersToStart) != 0 || plan.Waiting["app"].Reason != ReasonCrashLoopBackOff || plan.KillPod {
		t.Errorf("start %v waiting %v killPod %v: want the restart held back by CrashLoopBackOff, the pod kept", plan.ContainersToStart, plan.Waiting, plan.KillPod)
	}
}
