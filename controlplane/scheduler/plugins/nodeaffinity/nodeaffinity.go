// Package nodeaffinity is the NodeAffinity filter and score: the pod's
// nodeSelector and required node affinity must match the node; matched
// preferred terms add their weights to the score.
package nodeaffinity

import (
	"fmt"

	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	fw "berth/controlplane/scheduler/framework"
)

// Name is the plugin's name.
const Name = "NodeAffinity"

// ErrReason is the reason a node is rejected.
const ErrReason = "node(s) didn't match Pod's node affinity/selector"

// Plugin is the NodeAffinity filter and score.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name returns Name.
func (*Plugin) Name() string { return Name }

type preFilterState struct {
	required nodeaffinity.RequiredNodeAffinity
}

// PreFilter parses the pod's selector and required terms; Skip when there
// are none.
func (*Plugin) PreFilter(state *fw.CycleState, pod *fw.PodInfo, _ *fw.Snapshot) *fw.Status {
	spec := &pod.Pod.Spec
	hasRequired := spec.Affinity != nil && spec.Affinity.NodeAffinity != nil && spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
	if len(spec.NodeSelector) == 0 && !hasRequired {
		return fw.NewStatus(fw.Skip)
	}
	state.Write(Name, &preFilterState{required: nodeaffinity.GetRequiredNodeAffinity(pod.Pod)})
	return nil
}

// Filter rejects nodes the pod's nodeSelector or required affinity does
// not match.
func (*Plugin) Filter(state *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) *fw.Status {
	s, _ := state.Read(Name).(*preFilterState)
	if s == nil {
		s = &preFilterState{required: nodeaffinity.GetRequiredNodeAffinity(pod.Pod)}
	}
	ok, err := s.required.Match(node.Node)
	if err != nil {
		return fw.AsStatus(fmt.Errorf("pod %s/%s node affinity: %w", pod.Pod.Namespace, pod.Pod.Name, err))
	}
	if !ok {
		return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

type preScoreState struct {
	preferred *nodeaffinity.PreferredSchedulingTerms
}

// PreScore parses the preferred terms; Skip when there are none.
func (*Plugin) PreScore(state *fw.CycleState, pod *fw.PodInfo, _ *fw.Snapshot, _ []*fw.NodeInfo) *fw.Status {
	a := pod.Pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return fw.AsStatus(fmt.Errorf("pod %s/%s preferred node affinity: %w", pod.Pod.Namespace, pod.Pod.Name, err))
	}
	state.Write(Name+"/score", &preScoreState{preferred: terms})
	return nil
}

// Score sums the weights of the preferred terms the node matches.
func (*Plugin) Score(state *fw.CycleState, _ *fw.PodInfo, node *fw.NodeInfo) (int64, *fw.Status) {
	s, _ := state.Read(Name + "/score").(*preScoreState)
	if s == nil {
		return 0, nil
	}
	return s.preferred.Score(node.Node), nil
}

// NormalizeScore scales the sums so the best node gets 100.
func (*Plugin) NormalizeScore(_ *fw.CycleState, _ *fw.PodInfo, scores []fw.NodeScore) *fw.Status {
	fw.DefaultNormalizeScore(fw.MaxNodeScore, false, scores)
	return nil
}
