package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"berth/agent/podstate"
	"berth/cri"
	"berth/probes"
)

// The prober decides ready and started, and the conditions follow it.
func TestComputeTakesReadinessFromTheProber(t *testing.T) {
	// The manager is not run: no probe executes, so the client is never used.
	m, err := probes.New(probes.Config{Exec: (*cri.Client)(nil)})
	if err != nil {
		t.Fatal(err)
	}
	p := pod(v1.RestartPolicyAlways, nil, "app", "side")
	p.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	p.Spec.Containers[1].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	m.AddPod(p)
	rt := runtimeOf(true, "10.0.0.2").c("app", podstate.ContainerRunning, 0, "", 0).c("side", podstate.ContainerRunning, 0, "", 0).done()

	in := Input{Pod: p, Runtime: rt, Now: t0}
	st := Observe(in)
	m.UpdatePodStatus(p, &st)
	st = Finish(in, st)
	for _, name := range []string{"app", "side"} {
		cs, _ := find(st.ContainerStatuses, name)
		if cs.Ready || cs.State.Running == nil {
			t.Errorf("%s = %+v, want running and not ready before its probe succeeded", name, cs)
		}
	}
	if cs, _ := find(st.ContainerStatuses, "side"); cs.Started == nil || *cs.Started {
		t.Errorf("side started = %v, want false before its startup probe succeeded", cs.Started)
	}
	for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
		c := condOf(st, ct)
		if c.Status != v1.ConditionFalse || c.Reason != ReasonContainersNotReady || c.Message != "containers with unready status: [app side]" {
			t.Errorf("%s = %+v", ct, c)
		}
	}
	if st.Phase != v1.PodRunning {
		t.Errorf("phase %s, want Running (readiness does not change it)", st.Phase)
	}

	// Without a prober a running container is ready.
	st = Compute(Input{Pod: p, Runtime: rt, Now: t0})
	if c := condOf(st, v1.PodReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready without a prober = %+v", c)
	}
}
