// Package podtopologyspread is the PodTopologySpread filter
// (whenUnsatisfiable: DoNotSchedule) and score (ScheduleAnyway): matching
// pods are spread over topology domains so that no domain holds more than
// maxSkew above the least-loaded one.
package podtopologyspread

import (
	"fmt"
	"math"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	fw "berth/controlplane/scheduler/framework"
)

// Name is the plugin's name.
const Name = "PodTopologySpread"

// Reasons a node is rejected.
const (
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	ErrReasonNodeLabelNotMatch   = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// Plugin is the PodTopologySpread filter and score.
type Plugin struct{}

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name returns Name.
func (*Plugin) Name() string { return Name }

// constraint is a parsed topologySpreadConstraint.
type constraint struct {
	maxSkew       int32
	minDomains    int32
	topologyKey   string
	selector      labels.Selector
	honorAffinity bool
	honorTaints   bool
}

func constraints(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for i, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("spec.topologySpreadConstraints[%d].labelSelector: %w", i, err)
		}
		if c.LabelSelector != nil {
			if sel, err = fw.MergeLabelKeys(sel, pod.Labels, c.MatchLabelKeys, nil); err != nil {
				return nil, fmt.Errorf("spec.topologySpreadConstraints[%d]: %w", i, err)
			}
		}
		pc := constraint{maxSkew: c.MaxSkew, minDomains: 1, topologyKey: c.TopologyKey, selector: sel,
			honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor,
			honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor}
		if c.MinDomains != nil {
			pc.minDomains = *c.MinDomains
		}
		out = append(out, pc)
	}
	return out, nil
}

// includes reports whether node counts for c under its node inclusion
// policies.
func includes(c *constraint, pod *v1.Pod, aff nodeaffinity.RequiredNodeAffinity, node *v1.Node) bool {
	if c.honorAffinity {
		if ok, _ := aff.Match(node); !ok {
			return false
		}
	}
	if c.honorTaints {
		if _, untolerated := v1helper.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}, false); untolerated {
			return false
		}
	}
	return true
}

func hasAllKeys(node *v1.Node, cs []constraint) bool {
	for i := range cs {
		if _, ok := node.Labels[cs[i].topologyKey]; !ok {
			return false
		}
	}
	return true
}

// CountMatching counts the non-terminating pods in namespace ns that sel
// matches.
func CountMatching(pods []*fw.PodInfo, sel labels.Selector, ns string) int {
	n := 0
	for _, p := range pods {
		if p.Pod.DeletionTimestamp != nil || p.Pod.Namespace != ns {
			continue
		}
		if sel.Matches(labels.Set(p.Pod.Labels)) {
			n++
		}
	}
	return n
}

type preFilterState struct {
	constraints []constraint
	// matchNum[i] counts matching pods per domain value of constraint i.
	matchNum []map[string]int
	// minMatch[i] is the least count over constraint i's domains (0 when
	// there are fewer domains than minDomains).
	minMatch []int
}

// PreFilter counts matching pods per domain for the DoNotSchedule
// constraints; Skip when the pod has none.
func (*Plugin) PreFilter(state *fw.CycleState, pod *fw.PodInfo, snap *fw.Snapshot) *fw.Status {
	cs, err := constraints(pod.Pod, v1.DoNotSchedule)
	if err != nil {
		return fw.AsStatus(err)
	}
	if len(cs) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	s := &preFilterState{constraints: cs, matchNum: make([]map[string]int, len(cs)), minMatch: make([]int, len(cs))}
	for i := range cs {
		s.matchNum[i] = map[string]int{}
	}
	aff := nodeaffinity.GetRequiredNodeAffinity(pod.Pod)
	for _, n := range snap.Nodes {
		if !hasAllKeys(n.Node, cs) {
			continue
		}
		for i := range cs {
			if !includes(&cs[i], pod.Pod, aff, n.Node) {
				continue
			}
			s.matchNum[i][n.Node.Labels[cs[i].topologyKey]] += CountMatching(n.Pods, cs[i].selector, pod.Pod.Namespace)
		}
	}
	for i := range cs {
		if int32(len(s.matchNum[i])) < cs[i].minDomains {
			continue
		}
		m := math.MaxInt
		for _, v := range s.matchNum[i] {
			m = min(m, v)
		}
		if m != math.MaxInt {
			s.minMatch[i] = m
		}
	}
	state.Write(Name, s)
	return nil
}

// Filter rejects a node lacking a constraint's topology key, or where
// placing the pod would make its domain's skew exceed maxSkew.
func (*Plugin) Filter(state *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) *fw.Status {
	s, _ := state.Read(Name).(*preFilterState)
	if s == nil {
		return fw.AsStatus(fmt.Errorf("%s: no prefilter state", Name))
	}
	podLabels := labels.Set(pod.Pod.Labels)
	for i := range s.constraints {
		c := &s.constraints[i]
		value, ok := node.Node.Labels[c.topologyKey]
		if !ok {
			return fw.NewStatus(fw.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		self := 0
		if c.selector.Matches(podLabels) {
			self = 1
		}
		if skew := s.matchNum[i][value] + self - s.minMatch[i]; skew > int(c.maxSkew) {
			return fw.NewStatus(fw.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

type preScoreState struct {
	constraints []constraint
	ignored     map[string]bool
	pairCounts  []map[string]int
	weights     []float64
}

// PreScore counts matching pods per domain for the ScheduleAnyway
// constraints, over the domains of the feasible nodes; Skip when the pod
// has none.
func (*Plugin) PreScore(state *fw.CycleState, pod *fw.PodInfo, snap *fw.Snapshot, feasible []*fw.NodeInfo) *fw.Status {
	cs, err := constraints(pod.Pod, v1.ScheduleAnyway)
	if err != nil {
		return fw.AsStatus(err)
	}
	if len(cs) == 0 {
		return fw.NewStatus(fw.Skip)
	}
	s := &preScoreState{constraints: cs, ignored: map[string]bool{}, pairCounts: make([]map[string]int, len(cs)), weights: make([]float64, len(cs))}
	sizes := make([]int, len(cs))
	for i := range cs {
		s.pairCounts[i] = map[string]int{}
	}
	for _, n := range feasible {
		if !hasAllKeys(n.Node, cs) {
			s.ignored[n.Name()] = true
			continue
		}
		for i := range cs {
			if cs[i].topologyKey == v1.LabelHostname {
				sizes[i]++
				continue
			}
			v := n.Node.Labels[cs[i].topologyKey]
			if _, seen := s.pairCounts[i][v]; !seen {
				s.pairCounts[i][v] = 0
				sizes[i]++
			}
		}
	}
	aff := nodeaffinity.GetRequiredNodeAffinity(pod.Pod)
	for _, n := range snap.Nodes {
		if !hasAllKeys(n.Node, cs) {
			continue
		}
		for i := range cs {
			if cs[i].topologyKey == v1.LabelHostname || !includes(&cs[i], pod.Pod, aff, n.Node) {
				continue
			}
			v := n.Node.Labels[cs[i].topologyKey]
			if _, ok := s.pairCounts[i][v]; ok {
				s.pairCounts[i][v] += CountMatching(n.Pods, cs[i].selector, pod.Pod.Namespace)
			}
		}
	}
	for i := range cs {
		s.weights[i] = math.Log(float64(sizes[i] + 2))
	}
	state.Write(Name+"/score", s)
	return nil
}

// Score is, summed over constraints, the matching pods in the node's domain
// times the constraint's weight (log of domain count + 2) plus maxSkew-1.
func (*Plugin) Score(state *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) (int64, *fw.Status) {
	s, _ := state.Read(Name + "/score").(*preScoreState)
	if s == nil || s.ignored[node.Name()] {
		return 0, nil
	}
	var score float64
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := node.Node.Labels[c.topologyKey]
		if !ok {
			continue
		}
		var cnt int
		if c.topologyKey == v1.LabelHostname {
			cnt = CountMatching(node.Pods, c.selector, pod.Pod.Namespace)
		} else {
			cnt = s.pairCounts[i][v]
		}
		score += float64(cnt)*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// NormalizeScore maps the fewest matching pods to 100 and ignored nodes
// (missing a topology key) to 0.
func (*Plugin) NormalizeScore(state *fw.CycleState, _ *fw.PodInfo, scores []fw.NodeScore) *fw.Status {
	s, _ := state.Read(Name + "/score").(*preScoreState)
	if s == nil {
		return nil
	}
	minScore, maxScore := int64(math.MaxInt64), int64(0)
	for _, sc := range scores {
		if s.ignored[sc.Name] {
			continue
		}
		minScore = min(minScore, sc.Score)
		maxScore = max(maxScore, sc.Score)
	}
	for i := range scores {
		switch {
		case s.ignored[scores[i].Name]:
			scores[i].Score = 0
		case maxScore == 0:
			scores[i].Score = fw.MaxNodeScore
		default:
			scores[i].Score = fw.MaxNodeScore * (maxScore + minScore - scores[i].Score) / maxScore
		}
	}
	return nil
}
