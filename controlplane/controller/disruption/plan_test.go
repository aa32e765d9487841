package disruption

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPlan(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(name string, ready bool) *corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
	}
	deleting := pod("gone", true)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	budget := func(minAvailable, maxUnavailable *intstr.IntOrString, disrupted map[string]metav1.Time) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 3},
			Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: minAvailable, MaxUnavailable: maxUnavailable},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptedPods: disrupted}}
	}
	i := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	three := []*corev1.Pod{pod("a", true), pod("b", true), pod("c", true)}
	for _, tc := range []struct {
		name                                string
		in                                  Input
		expected, desired, healthy, allowed int32
		reason                              string
		disrupted                           []string
		recheck                             time.Duration
	}{
		{name: "minAvailable int met", in: Input{PDB: budget(i(2), nil, nil), Pods: three},
			expected: 3, desired: 2, healthy: 3, allowed: 1, reason: policyv1.SufficientPodsReason},
		{name: "minAvailable int not met", in: Input{PDB: budget(i(3), nil, nil), Pods: []*corev1.Pod{pod("a", true), pod("b", true), pod("c", false)}},
			expected: 3, desired: 3, healthy: 2, allowed: 0, reason: policyv1.InsufficientPodsReason},
		{name: "minAvailable percent rounds up on the scale", in: Input{PDB: budget(pct("50%"), nil, nil), Pods: three, Expected: 5},
			expected: 5, desired: 3, healthy: 3, allowed: 0, reason: policyv1.InsufficientPodsReason},
		{name: "maxUnavailable int", in: Input{PDB: budget(nil, i(1), nil), Pods: three, Expected: 3},
			expected: 3, desired: 2, healthy: 3, allowed: 1, reason: policyv1.SufficientPodsReason},
		{name: "maxUnavailable percent rounds up", in: Input{PDB: budget(nil, pct("34%"), nil), Pods: three, Expected: 3},
			expected: 3, desired: 1, healthy: 3, allowed: 2, reason: policyv1.SufficientPodsReason},
		{name: "maxUnavailable above the scale", in: Input{PDB: budget(nil, i(5), nil), Pods: three, Expected: 3},
			expected: 3, desired: 0, healthy: 3, allowed: 3, reason: policyv1.SufficientPodsReason},
		{name: "pods being deleted are not healthy", in: Input{PDB: budget(i(2), nil, nil), Pods: []*corev1.Pod{pod("a", true), pod("b", true), deleting}},
			expected: 3, desired: 2, healthy: 2, allowed: 0, reason: policyv1.InsufficientPodsReason},
		{name: "an evicted pod not yet deleted is not healthy", in: Input{PDB: budget(i(1), nil, map[string]metav1.Time{"a": {Time: now.Add(-30 * time.Second)}}), Pods: three},
			expected: 3, desired: 1, healthy: 2, allowed: 1, reason: policyv1.SufficientPodsReason, disrupted: []string{"a"}, recheck: 90 * time.Second},
		{name: "expired and deleted evictions are dropped", in: Input{PDB: budget(i(1), nil, map[string]metav1.Time{
			"a": {Time: now.Add(-3 * time.Minute)}, "gone": {Time: now}, "missing": {Time: now}}), Pods: append(three, deleting)},
			expected: 4, desired: 1, healthy: 3, allowed: 2, reason: policyv1.SufficientPodsReason},
		{name: "neither set", in: Input{PDB: budget(nil, nil, nil), Pods: three},
			expected: 0, desired: 0, healthy: 3, allowed: 3, reason: policyv1.SufficientPodsReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = now
			res := Plan(tc.in)
			st := res.Status
			if st.ExpectedPods != tc.expected || st.DesiredHealthy != tc.desired || st.CurrentHealthy != tc.healthy || st.DisruptionsAllowed != tc.allowed {
				t.Errorf("expected/desired/healthy/allowed = %d/%d/%d/%d, want %d/%d/%d/%d", st.ExpectedPods, st.DesiredHealthy, st.CurrentHealthy,
					st.DisruptionsAllowed, tc.expected, tc.desired, tc.healthy, tc.allowed)
			}
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d, want 3", st.ObservedGeneration)
			}
			cond := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
			wantStatus := metav1.ConditionFalse
			if tc.allowed > 0 {
				wantStatus = metav1.ConditionTrue
			}
			if cond == nil || cond.Reason != tc.reason || cond.Status != wantStatus {
				t.Errorf("DisruptionAllowed condition %+v, want %s %s", cond, wantStatus, tc.reason)
			}
			if len(st.DisruptedPods) != len(tc.disrupted) {
				t.Errorf("disruptedPods %v, want %v", st.DisruptedPods, tc.disrupted)
			}
			for _, n := range tc.disrupted {
				if _, ok := st.DisruptedPods[n]; !ok {
					t.Errorf("disruptedPods %v lacks %s", st.DisruptedPods, n)
				}
			}
			if res.RecheckAfter != tc.recheck {
				t.Errorf("recheck after %v, want %v", res.RecheckAfter, tc.recheck)
			}
		})
	}
}

func TestPlanFailsSafe(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 2},
		Spec:   policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 4, ObservedGeneration: 1}}
	res := Plan(Input{PDB: pdb, ScaleErr: errors.New(`found no controller ref for pod "a"`), Now: time.Now()})
	if res.Status.DisruptionsAllowed != 0 {
		t.Errorf("disruptionsAllowed %d, want 0", res.Status.DisruptionsAllowed)
	}
	cond := apimeta.FindStatusCondition(res.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != policyv1.SyncFailedReason || cond.Message != `found no controller ref for pod "a"` {
		t.Errorf("condition %+v, want False SyncFailed with the error", cond)
	}
	if !res.Changed(pdb) {
		t.Error("a fail-safe status reports no change")
	}
}

func TestNeedsScale(t *testing.T) {
	for _, tc := range []struct {
		spec policyv1.PodDisruptionBudgetSpec
		want bool
	}{
		{policyv1.PodDisruptionBudgetSpec{MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1}}, false},
		{policyv1.PodDisruptionBudgetSpec{MinAvailable: &intstr.IntOrString{Type: intstr.String, StrVal: "50%"}}, true},
		{policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1}}, true},
		{policyv1.PodDisruptionBudgetSpec{}, false},
	} {
		if got := NeedsScale(&policyv1.PodDisruptionBudget{Spec: tc.spec}); got != tc.want {
			t.Errorf("NeedsScale(%+v) = %v, want %v", tc.spec, got, tc.want)
		}
	}
}
