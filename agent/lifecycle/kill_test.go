package lifecycle

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/agent/podstate"
)

// Each kill carries the Killing event message upstream records for its
// cause; kills upstream does not word (the default "Stopping container
// NAME") carry none.
func TestComputeKillMessages(t *testing.T) {
	always := testPod(v1.RestartPolicyAlways, nil, "app", "side")
	never := testPod(v1.RestartPolicyNever, nil, "app", "side")
	withInit := testPod(v1.RestartPolicyAlways, []string{"init1"}, "app")
	tests := []struct {
		name      string
		pod       *v1.Pod
		rt        *podstate.Pod
		wantID    string
		wantMsg   string
		wantStart string
	}{
		{"definition changed", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).hash("app", 42).build(),
			"app-0", "Container app definition changed, will be restarted", "app"},
		{"definition changed restarts under Never too", never,
			observe(never).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).hash("side", 42).build(),
			"side-0", "Container side definition changed, will be restarted", "side"},
		{"app container in unknown state", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerUnknown, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).build(),
			"app-0", `Container is in "unknown" state, try killing it before restart`, "app"},
		{"init container in unknown state", withInit,
			observe(withInit).sandbox("s1", 0, true, "10.0.0.2").ctr("init1", podstate.ContainerUnknown, 0, 0).build(),
			"init1-0", `Init container is in "unknown" state, try killing it before restart`, "init1"},
		{"container not in the spec: the default message", always,
			observe(always).sandbox("s1", 0, true, "10.0.0.2").ctr("app", podstate.ContainerRunning, 0, 0).ctr("side", podstate.ContainerRunning, 0, 0).ctr("gone", podstate.ContainerRunning, 0, 0).build(),
			"gone-0", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Compute(Input{Pod: tt.pod, Runtime: tt.rt, Now: t0.Add(time.Hour)})
			if len(p.ContainersToKill) != 1 {
				t.Fatalf("ContainersToKill = %+v, want one", p.ContainersToKill)
			}
			k := p.ContainersToKill[0]
			if k.ID != tt.wantID || k.Message != tt.wantMsg || k.Reason == "" {
				t.Errorf("kill = %+v, want %s with message %q and a reason", k, tt.wantID, tt.wantMsg)
			}
			init, start, _, _, _ := names(p)
			var started string
			switch {
			case init != "":
				started = init
			case len(start) == 1:
				started = start[0]
			case len(start) > 1:
				t.Fatalf("started %v", start)
			}
			if started != tt.wantStart || p.KillPod {
				t.Errorf("started %q killPod %v, want %q and the pod kept", started, p.KillPod, tt.wantStart)
			}
		})
	}
}
