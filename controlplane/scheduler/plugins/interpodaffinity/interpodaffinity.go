// Package interpodaffinity is the InterPodAffinity filter and score: the
// pod's required pod affinity and anti-affinity, existing pods' required
// anti-affinity against the pod, and preferred terms both ways for the
// score.
package interpodaffinity

import (
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	fw "berth/controlplane/scheduler/framework"
)

// Name is the plugin's name.
const Name = "InterPodAffinity"

// Reasons a node is rejected.
const (
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	ErrReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ErrReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
)

// HardPodAffinityWeight is the score weight of an existing pod's required
// affinity term that the incoming pod matches (upstream's default).
const HardPodAffinityWeight = 1

// Plugin is the InterPodAffinity filter and score.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name returns Name.
func (*Plugin) Name() string { return Name }

type pair struct{ key, value string }

type preFilterState struct {
	existingAnti map[pair]int
	affinity     map[pair]int
	anti         map[pair]int
	selfMatchAll bool
}

func matchesAll(terms []fw.AffinityTerm, pod *v1.Pod, ns map[string]string) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod, ns) {
			return false
		}
	}
	return true
}

// namespaceLabels memoizes the snapshot's namespace label lookups for one
// plugin call.
func namespaceLabels(snap *fw.Snapshot) func(ns string) labels.Set {
	cache := map[string]labels.Set{}
	return func(ns string) labels.Set {
		if l, ok := cache[ns]; ok {
			return l
		}
		l := snap.NamespaceLabelsOf(ns)
		cache[ns] = l
		return l
	}
}

// PreFilter counts, per topology domain, existing pods whose required
// anti-affinity selects the pod, and existing pods the pod's required
// (anti-)affinity selects; Skip when neither applies.
func (*Plugin) PreFilter(state *fw.CycleState, pod *fw.PodInfo, snap *fw.Snapshot) *fw.Status {
	hasRequired := len(pod.RequiredAffinityTerms)+len(pod.RequiredAntiAffinityTerms) > 0
	if !hasRequired && len(snap.HavePodsWithRequiredAntiAffinity) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	s := &preFilterState{existingAnti: map[pair]int{}, affinity: map[pair]int{}, anti: map[pair]int{}}
	nsLabels := namespaceLabels(snap)
	podNS := nsLabels(pod.Pod.Namespace)
	for _, n := range snap.HavePodsWithRequiredAntiAffinity {
		for _, ep := range n.PodsWithRequiredAntiAffinity {
			for i := range ep.RequiredAntiAffinityTerms {
				t := &ep.RequiredAntiAffinityTerms[i]
				if v, ok := n.Node.Labels[t.TopologyKey]; ok && t.Matches(pod.Pod, podNS) {
					s.existingAnti[pair{t.TopologyKey, v}]++
				}
			}
		}
	}
	if hasRequired {
		s.selfMatchAll = matchesAll(pod.RequiredAffinityTerms, pod.Pod, podNS)
		for _, n := range snap.Nodes {
			for _, ep := range n.Pods {
				epNS := nsLabels(ep.Pod.Namespace)
				if matchesAll(pod.RequiredAffinityTerms, ep.Pod, epNS) {
					for i := range pod.RequiredAffinityTerms {
						t := &pod.RequiredAffinityTerms[i]
						if v, ok := n.Node.Labels[t.TopologyKey]; ok {
							s.affinity[pair{t.TopologyKey, v}]++
						}
					}
				}
				for i := range pod.RequiredAntiAffinityTerms {
					t := &pod.RequiredAntiAffinityTerms[i]
					if v, ok := n.Node.Labels[t.TopologyKey]; ok && t.Matches(ep.Pod, epNS) {
						s.anti[pair{t.TopologyKey, v}]++
					}
				}
			}
		}
	}
	state.Write(Name, s)
	return nil
}

// Filter checks, in upstream's order, the pod's required affinity (a pod
// matching its own terms may start a group where no pod matches yet), its
// required anti-affinity, then existing pods' anti-affinity.
func (*Plugin) Filter(state *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) *fw.Status {
	s, _ := state.Read(Name).(*preFilterState)
	if s == nil {
		return nil
	}
	nodeLabels := node.Node.Labels
	if len(pod.RequiredAffinityTerms) > 0 {
		exist := true
		for i := range pod.RequiredAffinityTerms {
			t := &pod.RequiredAffinityTerms[i]
			v, ok := nodeLabels[t.TopologyKey]
			if !ok {
				return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
			}
			if s.affinity[pair{t.TopologyKey, v}] <= 0 {
				exist = false
			}
		}
		if !exist && !(len(s.affinity) == 0 && s.selfMatchAll) {
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
		}
	}
	for i := range pod.RequiredAntiAffinityTerms {
		t := &pod.RequiredAntiAffinityTerms[i]
		if v, ok := nodeLabels[t.TopologyKey]; ok && s.anti[pair{t.TopologyKey, v}] > 0 {
			return fw.NewStatus(fw.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
		}
	}
	if len(s.existingAnti) > 0 {
		for k, v := range nodeLabels {
			if s.existingAnti[pair{k, v}] > 0 {
				return fw.NewStatus(fw.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
			}
		}
	}
	return nil
}

type preScoreState struct{ scores map[string]map[string]int64 }

func (s *preScoreState) add(key string, node *v1.Node, w int64) {
	v, ok := node.Labels[key]
	if !ok || w == 0 {
		return
	}
	m := s.scores[key]
	if m == nil {
		m = map[string]int64{}
		s.scores[key] = m
	}
	m[v] += w
}

// PreScore sums, per topology domain, the weights of preferred terms
// between the pod and existing pods (both ways, anti-affinity negative)
// and of existing pods' required affinity terms the pod matches; Skip when
// no term is involved.
func (*Plugin) PreScore(state *fw.CycleState, pod *fw.PodInfo, snap *fw.Snapshot, _ []*fw.NodeInfo) *fw.Status {
	hasPreferred := len(pod.PreferredAffinityTerms)+len(pod.PreferredAntiAffinityTerms) > 0
	if !hasPreferred && len(snap.HavePodsWithAffinity) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	nodes := snap.HavePodsWithAffinity
	if hasPreferred {
		nodes = snap.Nodes
	}
	s := &preScoreState{scores: map[string]map[string]int64{}}
	nsLabels := namespaceLabels(snap)
	podNS := nsLabels(pod.Pod.Namespace)
	for _, n := range nodes {
		if len(n.Node.Labels) == 0 {
			continue
		}
		pods := n.PodsWithAffinity
		if hasPreferred {
			pods = n.Pods
		}
		for _, ep := range pods {
			epNS := nsLabels(ep.Pod.Namespace)
			for i := range pod.PreferredAffinityTerms {
				if t := &pod.PreferredAffinityTerms[i]; t.Matches(ep.Pod, epNS) {
					s.add(t.TopologyKey, n.Node, int64(t.Weight))
				}
			}
			for i := range pod.PreferredAntiAffinityTerms {
				if t := &pod.PreferredAntiAffinityTerms[i]; t.Matches(ep.Pod, epNS) {
					s.add(t.TopologyKey, n.Node, -int64(t.Weight))
				}
			}
			for i := range ep.RequiredAffinityTerms {
				if t := &ep.RequiredAffinityTerms[i]; t.Matches(pod.Pod, podNS) {
					s.add(t.TopologyKey, n.Node, HardPodAffinityWeight)
				}
			}
			for i := range ep.PreferredAffinityTerms {
				if t := &ep.PreferredAffinityTerms[i]; t.Matches(pod.Pod, podNS) {
					s.add(t.TopologyKey, n.Node, int64(t.Weight))
				}
			}
			for i := range ep.PreferredAntiAffinityTerms {
				if t := &ep.PreferredAntiAffinityTerms[i]; t.Matches(pod.Pod, podNS) {
					s.add(t.TopologyKey, n.Node, -int64(t.Weight))
				}
			}
		}
	}
	state.Write(Name+"/score", s)
	return nil
}

// Score sums the domain weights of the node's topology labels.
func (*Plugin) Score(state *fw.CycleState, _ *fw.PodInfo, node *fw.NodeInfo) (int64, *fw.Status) {
	s, _ := state.Read(Name + "/score").(*preScoreState)
	if s == nil {
		return 0, nil
	}
	var score int64
	for key, byValue := range s.scores {
		if v, ok := node.Node.Labels[key]; ok {
			score += byValue[v]
		}
	}
	return score, nil
}

// NormalizeScore maps the scores linearly from their minimum (0) to their
// maximum (100); all equal gives 0.
func (*Plugin) NormalizeScore(_ *fw.CycleState, _ *fw.PodInfo, scores []fw.NodeScore) *fw.Status {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range scores {
		lo = min(lo, s.Score)
		hi = max(hi, s.Score)
	}
	for i := range scores {
		if hi > lo {
			scores[i].Score = int64(float64(fw.MaxNodeScore) * float64(scores[i].Score-lo) / float64(hi-lo))
		} else {
			scores[i].Score = 0
		}
	}
	return nil
}
