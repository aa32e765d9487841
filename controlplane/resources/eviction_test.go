package resources

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEvictionBudgetRules(t *testing.T) {
	pod := func(phase corev1.PodPhase, ready, deleting bool) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"pending", pod(corev1.PodPending, false, false), true},
		{"succeeded", pod(corev1.PodSucceeded, false, false), true},
		{"failed", pod(corev1.PodFailed, false, false), true},
		{"terminating", pod(corev1.PodRunning, true, true), true},
		{"running", pod(corev1.PodRunning, true, false), false},
		{"running, not ready", pod(corev1.PodRunning, false, false), false},
	} {
		if got := canIgnoreBudget(tc.pod); got != tc.want {
			t.Errorf("canIgnoreBudget(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}

	always, ifHealthy := policyv1.AlwaysAllow, policyv1.IfHealthyBudget
	budget := func(policy *policyv1.UnhealthyPodEvictionPolicyType, healthy, desired int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{UnhealthyPodEvictionPolicy: policy},
			Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: healthy, DesiredHealthy: desired}}
	}
	for _, tc := range []struct {
		name string
		pdb  *policyv1.PodDisruptionBudget
		pod  *corev1.Pod
		want bool
	}{
		{"ready pods always count", budget(&always, 5, 1), pod(corev1.PodRunning, true, false), false},
		{"AlwaysAllow lets an unready pod go", budget(&always, 0, 3), pod(corev1.PodRunning, false, false), true},
		{"IfHealthyBudget met", budget(&ifHealthy, 3, 3), pod(corev1.PodRunning, false, false), true},
		{"IfHealthyBudget not met", budget(&ifHealthy, 2, 3), pod(corev1.PodRunning, false, false), false},
		{"default is IfHealthyBudget", budget(nil, 3, 3), pod(corev1.PodRunning, false, false), true},
		{"nothing desired", budget(nil, 0, 0), pod(corev1.PodRunning, false, false), false},
	} {
		if got := unhealthyMayGo(tc.pdb, tc.pod); got != tc.want {
			t.Errorf("unhealthyMayGo(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
