package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	fw "berth/controlplane/scheduler/framework"
)

// Preemption messages, as upstream's DefaultPreemption words them.
const (
	msgPreemptNever         = "not eligible due to preemptionPolicy=Never."
	msgTerminatingNominated = "not eligible due to a terminating pod on the nominated node."
	msgNoVictims            = "No preemption victims found for incoming pod"
	msgNotHelpful           = "Preemption is not helpful for scheduling"
	// ReasonPreempted is the event reason on a victim.
	ReasonPreempted = "Preempted"
)

// Candidate is a node where deleting Victims (most important first) lets
// the pod fit, NumPDBViolations of them against their disruption budget.
type Candidate struct {
	Node             string
	Victims          []*v1.Pod
	NumPDBViolations int
}

// EligibleToPreempt reports whether pod may preempt others, and why not
// (upstream's PodEligibleToPreemptOthers): not with preemptionPolicy
// Never, and not while a lower-priority pod on its nominated node is
// still terminating (its last preemption is under way), unless that node
// can no longer fit it at all.
func EligibleToPreempt(pod *v1.Pod, snap *fw.Snapshot, nominatedStatus *fw.Status) (bool, string) {
	if p := pod.Spec.PreemptionPolicy; p != nil && *p == v1.PreemptNever {
		return false, msgPreemptNever
	}
	nominated := pod.Status.NominatedNodeName
	if nominated == "" || nominatedStatus.Code() == fw.UnschedulableAndUnresolvable {
		return true, ""
	}
	if n := snap.Get(nominated); n != nil {
		prio := corev1helpers.PodPriority(pod)
		for _, pi := range n.Pods {
			if pi.Pod.DeletionTimestamp != nil && corev1helpers.PodPriority(pi.Pod) < prio {
				return false, msgTerminatingNominated
			}
		}
	}
	return true, ""
}

// moreImportant orders pods by priority, then earlier start.
func moreImportant(a, b *v1.Pod) bool {
	pa, pb := corev1helpers.PodPriority(a), corev1helpers.PodPriority(b)
	if pa != pb {
		return pa > pb
	}
	return startTime(a).Time.Before(startTime(b).Time)
}

func startTime(p *v1.Pod) metav1.Time {
	if p.Status.StartTime != nil {
		return *p.Status.StartTime
	}
	return p.CreationTimestamp
}

// splitByPDB sorts pods (kept in order) into those whose deletion would
// exceed a matching budget's disruptionsAllowed and the others, counting
// each budget down as upstream's filterPodsWithPDBViolation.
func splitByPDB(pods []*fw.PodInfo, pdbs []*policyv1.PodDisruptionBudget) (violating, nonViolating []*fw.PodInfo) {
	allowed := make([]int32, len(pdbs))
	for i, p := range pdbs {
		allowed[i] = p.Status.DisruptionsAllowed
	}
	for _, pi := range pods {
		pod := pi.Pod
		violates := false
		if len(pod.Labels) != 0 {
			for i, pdb := range pdbs {
				if pdb.Namespace != pod.Namespace {
					continue
				}
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
					continue
				}
				if _, disrupted := pdb.Status.DisruptedPods[pod.Name]; disrupted {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violates = true
				}
			}
		}
		if violates {
			violating = append(violating, pi)
		} else {
			nonViolating = append(nonViolating, pi)
		}
	}
	return violating, nonViolating
}

// SelectVictims finds the fewest, least important pods of node whose
// removal lets pod pass fits (upstream's SelectVictimsOnNode): every
// lower-priority pod is removed; if the pod then fits, they are put back
// one by one, most important first, PDB-violating ones before the others,
// and those whose return makes the pod not fit are the victims. node is
// modified (pass a clone).
func SelectVictims(pod *v1.Pod, node *fw.NodeInfo, pdbs []*policyv1.PodDisruptionBudget, fits func(*fw.NodeInfo) *fw.Status) ([]*v1.Pod, int, *fw.Status) {
	prio := corev1helpers.PodPriority(pod)
	var potential []*fw.PodInfo
	for _, pi := range slices.Clone(node.Pods) {
		if corev1helpers.PodPriority(pi.Pod) < prio {
			potential = append(potential, pi)
			node.RemovePod(pi.Pod.UID)
		}
	}
	if len(potential) == 0 {
		return nil, 0, fw.NewStatus(fw.UnschedulableAndUnresolvable, msgNoVictims)
	}
	if st := fits(node); !st.IsSuccess() {
		return nil, 0, st
	}
	slices.SortStableFunc(potential, func(a, b *fw.PodInfo) int {
		switch {
		case moreImportant(a.Pod, b.Pod):
			return -1
		case moreImportant(b.Pod, a.Pod):
			return 1
		}
		return 0
	})
	violating, nonViolating := splitByPDB(potential, pdbs)
	var victims []*v1.Pod
	violations := 0
	reprieve := func(pi *fw.PodInfo) bool {
		node.AddPod(pi)
		if fits(node).IsSuccess() {
			return true
		}
		node.RemovePod(pi.Pod.UID)
		victims = append(victims, pi.Pod)
		return false
	}
	for _, pi := range violating {
		if !reprieve(pi) {
			violations++
		}
	}
	for _, pi := range nonViolating {
		reprieve(pi)
	}
	if len(violating) != 0 && len(nonViolating) != 0 {
		slices.SortStableFunc(victims, func(a, b *v1.Pod) int {
			switch {
			case moreImportant(a, b):
				return -1
			case moreImportant(b, a):
				return 1
			}
			return 0
		})
	}
	return victims, violations, nil
}

// PickCandidate chooses where to preempt as upstream's
// pickOneNodeForPreemption: a node needing no victims at once, else the
// fewest PDB violations, then the lowest highest-priority victim, the
// lowest sum of victim priorities, the fewest victims, the latest start of
// the highest-priority victims, then the first.
func PickCandidate(cands []Candidate) *Candidate {
	if len(cands) == 0 {
		return nil
	}
	for i := range cands {
		if len(cands[i].Victims) == 0 {
			return &cands[i]
		}
	}
	best := slices.Clone(cands)
	keep := func(score func(c *Candidate) int64) {
		top := int64(math.MinInt64)
		var out []Candidate
		for i := range best {
			s := score(&best[i])
			switch {
			case s > top:
				top, out = s, []Candidate{best[i]}
			case s == top:
				out = append(out, best[i])
			}
		}
		best = out
	}
	keep(func(c *Candidate) int64 { return -int64(c.NumPDBViolations) })
	keep(func(c *Candidate) int64 { return -int64(corev1helpers.PodPriority(c.Victims[0])) })
	keep(func(c *Candidate) int64 {
		var sum int64
		for _, v := range c.Victims {
			sum += int64(corev1helpers.PodPriority(v)) + int64(math.MaxInt32) + 1
		}
		return -sum
	})
	keep(func(c *Candidate) int64 { return -int64(len(c.Victims)) })
	keep(func(c *Candidate) int64 {
		top := corev1helpers.PodPriority(c.Victims[0])
		earliest := startTime(c.Victims[0])
		for _, v := range c.Victims {
			if corev1helpers.PodPriority(v) == top && startTime(v).Time.Before(earliest.Time) {
				earliest = startTime(v)
			}
		}
		return earliest.UnixNano()
	})
	for i := range cands {
		if cands[i].Node == best[0].Node {
			return &cands[i]
		}
	}
	return &best[0]
}

// FindCandidates simulates preemption on every node the pod failed on for
// a reason other pods' removal may resolve. Filters run against each
// node's state without the victims; the PreFilter state is the whole
// cluster's (plugins whose PreFilter counts other pods, such as
// inter-pod anti-affinity, see the victims still there: best effort).
func (a *Algorithm) FindCandidates(ctx context.Context, pod *fw.PodInfo, snap *fw.Snapshot, diag fw.Diagnosis, pdbs []*policyv1.PodDisruptionBudget) ([]Candidate, map[string]*fw.Status) {
	state := fw.NewCycleState()
	for _, p := range a.Profile.PreFilter {
		st := p.PreFilter(state, pod, snap)
		switch {
		case st.Code() == fw.Skip:
			state.SkipFilter[p.Name()] = true
		case !st.IsSuccess():
			return nil, nil
		}
	}
	fits := func(n *fw.NodeInfo) *fw.Status {
		for _, f := range a.Profile.Filter {
			if state.SkipFilter[f.Name()] {
				continue
			}
			if st := f.Filter(state, pod, n); !st.IsSuccess() {
				return st.WithPlugin(f.Name())
			}
		}
		return nil
	}
	var cands []Candidate
	statuses := map[string]*fw.Status{}
	for _, n := range snap.Nodes {
		if ctx.Err() != nil {
			return nil, nil
		}
		st, failed := diag.NodeToStatus[n.Name()]
		if !failed || st.Code() == fw.UnschedulableAndUnresolvable {
			continue
		}
		victims, violations, vst := SelectVictims(pod.Pod, n.Clone(), pdbs, fits)
		if vst != nil {
			statuses[n.Name()] = vst
			continue
		}
		cands = append(cands, Candidate{Node: n.Name(), Victims: victims, NumPDBViolations: violations})
	}
	return cands, statuses
}

// preempt is the PostFilter step of a failed cycle: when pod may preempt,
// it picks a node, deletes the victims there (after marking them with the
// DisruptionTarget condition), clears the nomination of lower-priority
// pods nominated to that node, and returns the node to nominate. msg is
// what to add to the failure message when nothing was done, prefixed
// "preemption: " as upstream's DefaultPreemption does.
func (s *Scheduler) preempt(ctx context.Context, pi *fw.PodInfo, fitErr *fw.FitError) (nominated string, msg string) {
	pod := pi.Pod
	if fresh, err := s.podLister.Pods(pod.Namespace).Get(pod.Name); err == nil {
		pod = fresh
	}
	if ok, why := EligibleToPreempt(pod, s.snapshot, fitErr.Diagnosis.NodeToStatus[pod.Status.NominatedNodeName]); !ok {
		return pod.Status.NominatedNodeName, "preemption: " + why
	}
	var pdbs []*policyv1.PodDisruptionBudget
	if s.pdbLister != nil {
		pdbs, _ = s.pdbLister.List(labels.Everything())
	}
	cands, statuses := s.algorithm.FindCandidates(ctx, pi, s.snapshot, fitErr.Diagnosis, pdbs)
	best := PickCandidate(cands)
	if best == nil {
		if statuses == nil { // no node was tried (a PreFilter refused the pod)
			statuses = map[string]*fw.Status{}
		}
		fe := &fw.FitError{Pod: pod, NumAllNodes: len(s.snapshot.Nodes), Diagnosis: fw.Diagnosis{NodeToStatus: statuses}}
		for _, n := range s.snapshot.Nodes {
			if _, ok := statuses[n.Name()]; !ok {
				statuses[n.Name()] = fw.NewStatus(fw.UnschedulableAndUnresolvable, msgNotHelpful)
			}
		}
		return "", "preemption: " + fe.Error()
	}
	for _, v := range best.Victims {
		if err := s.evictVictim(ctx, v, pod, best.Node); err != nil {
			s.log.Info("preemption: deleting victim failed", "victim", podKey(v), "err", err)
			return "", ""
		}
	}
	s.clearLowerNominations(ctx, pod, best.Node)
	return best.Node, ""
}

// evictVictim marks victim with DisruptionTarget (PreemptionByScheduler)
// and deletes it, recording the Preempted event.
func (s *Scheduler) evictVictim(ctx context.Context, victim, preemptor *v1.Pod, node string) error {
	cond := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler,
		Message: s.cfg.SchedulerName + ": preempting to accommodate a higher priority pod", LastTransitionTime: metav1.NewTime(s.cfg.Clock.Now())}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.PodCondition{cond}}})
	if err != nil {
		return err
	}
	pods := s.cfg.Client.CoreV1().Pods(victim.Namespace)
	if _, err := pods.Patch(ctx, victim.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := pods.Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	s.recorder.Eventf(victim, preemptor, v1.EventTypeNormal, ReasonPreempted, "Preempting", "Preempted by pod %v on node %v", preemptor.UID, node)
	return nil
}

// clearLowerNominations removes the nomination of pods of lower priority
// than pod nominated to node (they would no longer fit there).
func (s *Scheduler) clearLowerNominations(ctx context.Context, pod *v1.Pod, node string) {
	all, err := s.podLister.List(labels.Everything())
	if err != nil {
		return
	}
	prio := corev1helpers.PodPriority(pod)
	for _, p := range all {
		if p.Status.NominatedNodeName != node || p.UID == pod.UID || corev1helpers.PodPriority(p) >= prio {
			continue
		}
		s.nominator.remove(p.UID)
		patch := []byte(`{"status":{"nominatedNodeName":null}}`)
		if _, err := s.cfg.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
			s.log.Info("preemption: clearing nomination failed", "pod", podKey(p), "err", fmt.Sprint(err))
		}
	}
}
