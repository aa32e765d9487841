package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"berth/agent/podstate"
)

// Ready waits for every readiness gate's condition (set on the pod's status
// by someone else) to be True, with upstream's reason and messages;
// ContainersReady does not.
func TestComputeReadinessGates(t *testing.T) {
	rt := runtimeOf(true, "10.0.0.2").c("app", podstate.ContainerRunning, 0, "", 0).done()
	gated := func(conds ...v1.PodCondition) *v1.Pod {
		p := pod(v1.RestartPolicyAlways, nil, "app")
		p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "k8s.io/one"}, {ConditionType: "k8s.io/two"}}
		p.Status.Conditions = conds
		return p
	}
	one := func(s v1.ConditionStatus) v1.PodCondition { return v1.PodCondition{Type: "k8s.io/one", Status: s} }
	two := func(s v1.ConditionStatus) v1.PodCondition { return v1.PodCondition{Type: "k8s.io/two", Status: s} }
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		ready   v1.ConditionStatus
		reason  string
		message string
	}{
		{"no gate conditions", gated(), v1.ConditionFalse, "ReadinessGatesNotReady",
			`corresponding condition of pod readiness gate "k8s.io/one" does not exist., corresponding condition of pod readiness gate "k8s.io/two" does not exist.`},
		{"one True, one missing", gated(one(v1.ConditionTrue)), v1.ConditionFalse, "ReadinessGatesNotReady",
			`corresponding condition of pod readiness gate "k8s.io/two" does not exist.`},
		{"one False", gated(one(v1.ConditionFalse), two(v1.ConditionTrue)), v1.ConditionFalse, "ReadinessGatesNotReady",
			`the status of pod readiness gate "k8s.io/one" is not "True", but False`},
		{"all True", gated(one(v1.ConditionTrue), two(v1.ConditionTrue)), v1.ConditionTrue, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Compute(Input{Pod: tc.pod, Runtime: rt, Now: t0})
			r := condOf(st, v1.PodReady)
			if r.Status != tc.ready || r.Reason != tc.reason || r.Message != tc.message {
				t.Errorf("Ready = %s %q %q, want %s %q %q", r.Status, r.Reason, r.Message, tc.ready, tc.reason, tc.message)
			}
			if cr := condOf(st, v1.ContainersReady); cr.Status != v1.ConditionTrue {
				t.Errorf("ContainersReady = %s: gates must not hold it", cr.Status)
			}
		})
	}
	// Containers not ready: Ready says so, whatever the gates.
	notRunning := gated(one(v1.ConditionTrue), two(v1.ConditionTrue))
	st := Compute(Input{Pod: notRunning, Runtime: runtimeOf(true, "10.0.0.2").done(), Now: t0})
	if r := condOf(st, v1.PodReady); r.Reason != ReasonContainersNotReady {
		t.Errorf("Ready reason %q, want ContainersNotReady", r.Reason)
	}
}
