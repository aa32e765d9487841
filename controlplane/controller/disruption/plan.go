// Package disruption is berth's disruption controller: it keeps each
// policy/v1 PodDisruptionBudget's status (expectedPods, desiredHealthy,
// currentHealthy, disruptionsAllowed, disruptedPods, the DisruptionAllowed
// condition, observedGeneration) as upstream's does, so the pods/eviction
// subresource can honour the budget.
//
// Plan is the pure computation from the budget, its pods and the expected
// pod count (the scale of the pods' controllers); Controller gathers those
// and writes the status when it changed.
package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/controlplane/controller"
)

// DeletionTimeout is how long an eviction's entry in disruptedPods stays
// without the pod's deletion being observed (upstream's 2 minutes).
const DeletionTimeout = 2 * time.Minute

// NeedsScale reports whether the budget's arithmetic needs the expected pod
// count from the pods' controllers (maxUnavailable, or a percentage
// minAvailable) rather than the number of pods.
func NeedsScale(pdb *policyv1.PodDisruptionBudget) bool {
	return pdb.Spec.MaxUnavailable != nil || (pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.String)
}

// Input is what Plan decides from.
type Input struct {
	// PDB is the budget.
	PDB *policyv1.PodDisruptionBudget
	// Pods are the pods its selector matches.
	Pods []*corev1.Pod
	// Expected is the sum of the pods' controllers' replicas (used when
	// NeedsScale).
	Expected int32
	// ScaleErr, when set, is why Expected could not be found: the budget
	// fails safe (no disruption allowed, DisruptionAllowed False SyncFailed).
	ScaleErr error
	// Now is the current time.
	Now time.Time
}

// Result is Plan's decision.
type Result struct {
	// Status is the budget's new status.
	Status policyv1.PodDisruptionBudgetStatus
	// RecheckAfter, when > 0, is when a disruptedPods entry expires and the
	// budget must be computed again.
	RecheckAfter time.Duration
}

// Changed reports whether the status differs from the budget's.
func (r Result) Changed(pdb *policyv1.PodDisruptionBudget) bool {
	return !apiequality.Semantic.DeepEqual(r.Status, pdb.Status)
}

// Plan computes the budget's status as upstream's controller does.
func Plan(in Input) Result {
	pdb := in.PDB
	st := *pdb.Status.DeepCopy()
	if in.ScaleErr != nil {
		st.DisruptionsAllowed = 0
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
			Reason: policyv1.SyncFailedReason, Message: in.ScaleErr.Error(), ObservedGeneration: st.ObservedGeneration})
		return Result{Status: st}
	}
	var expected, desired int32
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		expected = in.Expected
		maxUnavailable, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		desired = max(expected-int32(maxUnavailable), 0)
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		desired, expected = pdb.Spec.MinAvailable.IntVal, int32(len(in.Pods))
	case pdb.Spec.MinAvailable != nil:
		expected = in.Expected
		minAvailable, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		desired = int32(minAvailable)
	}
	disrupted, recheck := liveDisruptions(pdb.Status.DisruptedPods, in.Pods, in.Now)
	var healthy int32
	for _, p := range in.Pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if _, evicted := disrupted[p.Name]; evicted {
			continue
		}
		if controller.PodReady(p) {
			healthy++
		}
	}
	st.ExpectedPods, st.DesiredHealthy, st.CurrentHealthy = expected, desired, healthy
	st.DisruptionsAllowed = max(healthy-desired, 0)
	st.DisruptedPods = disrupted
	st.ObservedGeneration = pdb.Generation
	SetDisruptionAllowedCondition(&st)
	return Result{Status: st, RecheckAfter: recheck}
}

// SetDisruptionAllowedCondition sets DisruptionAllowed from
// disruptionsAllowed: True SufficientPods, or False InsufficientPods.
func SetDisruptionAllowedCondition(st *policyv1.PodDisruptionBudgetStatus) {
	cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
		Reason: policyv1.InsufficientPodsReason, ObservedGeneration: st.ObservedGeneration}
	if st.DisruptionsAllowed > 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
	}
	apimeta.SetStatusCondition(&st.Conditions, cond)
}

// liveDisruptions keeps the disruptedPods entries of pods that still exist
// and are not yet being deleted, until DeletionTimeout after the eviction;
// it returns when the earliest kept entry expires.
func liveDisruptions(old map[string]metav1.Time, pods []*corev1.Pod, now time.Time) (map[string]metav1.Time, time.Duration) {
	if len(old) == 0 {
		return nil, 0
	}
	byName := make(map[string]*corev1.Pod, len(pods))
	for _, p := range pods {
		byName[p.Name] = p
	}
	var out map[string]metav1.Time
	var recheck time.Duration
	for name, at := range old {
		p, ok := byName[name]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		left := at.Add(DeletionTimeout).Sub(now)
		if left <= 0 {
			continue
		}
		if out == nil {
			out = map[string]metav1.Time{}
		}
		out[name] = at
		if recheck == 0 || left < recheck {
			recheck = left
		}
	}
	return out, recheck
}
