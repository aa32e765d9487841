package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"berth/agent/podstate"
)

// Ephemeral containers get statuses of their own, never ready and without
// a started flag; they change neither the phase nor the conditions, and a
// start failure shows only until one ran.
func TestComputeEphemeralContainerStatuses(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, nil, "app")
	for _, n := range []string{"zdebug", "adebug", "failing"} {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n, Image: "busybox"}})
	}
	rt := runtimeOf(true, "10.0.0.2").c("app", podstate.ContainerRunning, 0, "", 0).
		c("zdebug", podstate.ContainerRunning, 0, "", 0).c("adebug", podstate.ContainerExited, 1, "Error", 0).done()
	st := Compute(Input{Pod: p, Runtime: rt, Now: t0, Failures: map[string]Failure{
		"adebug":  {Reason: "CreateContainerConfigError", Message: "stale"},
		"failing": {Reason: "CreateContainerConfigError", Message: "unable to find target container nope"},
	}})
	if st.Phase != v1.PodRunning || condOf(st, v1.PodReady).Status != v1.ConditionTrue {
		t.Errorf("phase %s, Ready %s: ephemeral containers must not count", st.Phase, condOf(st, v1.PodReady).Status)
	}
	ecs := st.EphemeralContainerStatuses
	if len(ecs) != 3 || ecs[0].Name != "adebug" || ecs[1].Name != "failing" || ecs[2].Name != "zdebug" {
		t.Fatalf("ephemeral statuses %+v, want adebug, failing, zdebug", ecs)
	}
	if r := ecs[2]; r.State.Running == nil || r.Ready || r.Started != nil || r.ContainerID != "containerd://zdebug0" {
		t.Errorf("running debugger: %+v", r)
	}
	if e := ecs[0]; e.State.Terminated == nil || e.State.Terminated.ExitCode != 1 {
		t.Errorf("exited debugger shows %+v, want its termination (it never restarts)", e.State)
	}
	if f := ecs[1]; f.State.Waiting == nil || f.State.Waiting.Reason != "CreateContainerConfigError" || f.State.Waiting.Message != "unable to find target container nope" {
		t.Errorf("debugger that failed to start: %+v", f.State)
	}
	if st := Compute(Input{Pod: pod(v1.RestartPolicyAlways, nil, "app"), Runtime: rt, Now: t0}); st.EphemeralContainerStatuses != nil {
		t.Errorf("a pod without ephemeral containers has statuses %+v", st.EphemeralContainerStatuses)
	}
}
