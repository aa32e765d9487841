package scheduler

import (
	"context"
	"testing"

	"berth/integration/harness"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
)

// TestPreemption: on a full node a high-priority pod preempts the
// low-priority one (marked DisruptionTarget/PreemptionByScheduler, deleted,
// the preemptor nominated and then bound), a pod with preemptionPolicy
// Never waits instead, and of two victims the one without a disruption
// budget is chosen.
func TestPreemption(t *testing.T) {
	ctx := context.Background()
	c := startCluster(t)
	never := corev1.PreemptNever
	for name, value := range map[string]int32{"low": 10, "high": 1000, "high-never": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if name == "high-never" {
			pc.PreemptionPolicy = &never
		}
		if _, err := c.client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	withClass := func(class string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.PriorityClassName = class }
	}
	c.createNodes(t, node("full", "2", nil, nil))
	c.createPod(t, pod("victim", "2", withClass("low")))
	c.waitBound(t, "victim")

	c.createPod(t, pod("polite", "2", withClass("high-never")))
	c.waitFailedScheduling(t, "polite", "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.")
	c.deletePod(t, "polite")

	c.createPod(t, pod("urgent", "2", withClass("high")))
	harness.Eventually(t, "the victim marked and deleted, the preemptor nominated", func() (bool, error) {
		v, err := c.client.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		marked := false
		for _, cond := range v.Status.Conditions {
			if cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue && cond.Reason == corev1.PodReasonPreemptionByScheduler {
				marked = true
			}
		}
		u, err := c.client.CoreV1().Pods(ns).Get(ctx, "urgent", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return marked && v.DeletionTimestamp != nil && u.Status.NominatedNodeName == "full" && u.Spec.NodeName == "", nil
	})
	if len(c.events(t, "victim", "Preempted")) == 0 {
		harness.Eventually(t, "Preempted event on the victim", func() (bool, error) { return len(c.events(t, "victim", "Preempted")) > 0, nil })
	}
	// No agent runs: finish the victim's termination as one would.
	c.deletePod(t, "victim")
	if got := c.waitBound(t, "urgent"); got != "full" {
		t.Fatalf("urgent bound to %s, want full", got)
	}

	// Two more nodes, each with a low pod; one pod is guarded by a budget
	// allowing no disruption: the other is preempted.
	c.createNodes(t, node("a", "2", nil, nil), node("b", "2", nil, nil))
	c.createPod(t, pod("guarded", "2", withClass("low"), func(p *corev1.Pod) {
		p.Labels["app"] = "db"
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "a"}
	}))
	c.createPod(t, pod("spare", "2", withClass("low"), func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "b"}
	}))
	c.waitBound(t, "guarded")
	c.waitBound(t, "spare")
	minAvail := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvail, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	if _, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Write the budget's status as the server's disruption controller would
	// (one pod, not Ready: none may go); the controller may write first.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := c.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if latest.Status.ObservedGeneration == latest.Generation && latest.Status.DisruptionsAllowed == 0 {
			return nil
		}
		latest.Status = policyv1.PodDisruptionBudgetStatus{DesiredHealthy: 1, ExpectedPods: 1, ObservedGeneration: latest.Generation}
		_, err = c.client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, latest, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	c.createPod(t, pod("urgent2", "2", withClass("high"), func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}}}
	}))
	harness.Eventually(t, "the unguarded pod preempted", func() (bool, error) {
		u, err := c.client.CoreV1().Pods(ns).Get(ctx, "urgent2", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return u.Status.NominatedNodeName == "b", nil
	})
	g, err := c.client.CoreV1().Pods(ns).Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil || g.DeletionTimestamp != nil {
		t.Fatalf("the guarded pod was preempted (%v)", err)
	}
}
