// Package tainttoleration is the TaintToleration filter and score: a node's
// NoSchedule and NoExecute taints must be tolerated; untolerated
// PreferNoSchedule taints lower the node's score.
package tainttoleration

import (
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"

	fw "berth/controlplane/scheduler/framework"
)

// Name is the plugin's name.
const Name = "TaintToleration"

// Plugin is the TaintToleration filter and score.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name returns Name.
func (*Plugin) Name() string { return Name }

func hardTaint(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// Filter rejects a node with a NoSchedule or NoExecute taint the pod does
// not tolerate, naming the first such taint.
func (*Plugin) Filter(_ *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) *fw.Status {
	taint, untolerated := v1helper.FindMatchingUntoleratedTaint(logr.Discard(), node.Node.Spec.Taints, pod.Pod.Spec.Tolerations, hardTaint, false)
	if !untolerated {
		return nil
	}
	return fw.NewStatus(fw.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
}

type preScoreState struct{ tolerations []v1.Toleration }

// PreScore keeps the pod's tolerations that apply to PreferNoSchedule.
func (p *Plugin) PreScore(state *fw.CycleState, pod *fw.PodInfo, _ *fw.Snapshot, _ []*fw.NodeInfo) *fw.Status {
	var tols []v1.Toleration
	for _, t := range pod.Pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tols = append(tols, t)
		}
	}
	state.Write(Name, &preScoreState{tolerations: tols})
	return nil
}

// Score counts the node's PreferNoSchedule taints the pod does not
// tolerate (normalized in reverse: fewer is better).
func (p *Plugin) Score(state *fw.CycleState, _ *fw.PodInfo, node *fw.NodeInfo) (int64, *fw.Status) {
	s, _ := state.Read(Name).(*preScoreState)
	if s == nil {
		return 0, fw.AsStatus(fmt.Errorf("%s: no prescore state", Name))
	}
	var n int64
	for i := range node.Node.Spec.Taints {
		t := &node.Node.Spec.Taints[i]
		if t.Effect != v1.TaintEffectPreferNoSchedule {
			continue
		}
		if !v1helper.TolerationsTolerateTaint(logr.Discard(), s.tolerations, t, false) {
			n++
		}
	}
	return n, nil
}

// NormalizeScore maps counts to 100 (none) … 0 (the most).
func (p *Plugin) NormalizeScore(_ *fw.CycleState, _ *fw.PodInfo, scores []fw.NodeScore) *fw.Status {
	fw.DefaultNormalizeScore(fw.MaxNodeScore, true, scores)
	return nil
}
