package controllers

import (
	"context"
	"strings"
	"testing"

	"berth/integration/harness"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// waitBudget waits until the budget's status, observed at its generation,
// satisfies cond.
func waitBudget(t *testing.T, ns, name, what string, cond func(*policyv1.PodDisruptionBudget) bool) *policyv1.PodDisruptionBudget {
	t.Helper()
	var pdb *policyv1.PodDisruptionBudget
	harness.Eventually(t, what, func() (bool, error) {
		var err error
		pdb, err = env.client.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && pdb.Status.ObservedGeneration == pdb.Generation && cond(pdb), err
	})
	return pdb
}

// readyPods lists the namespace's ready pods not being deleted.
func readyPods(t *testing.T, ns string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range activePods(t, ns) {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestDisruptionBudgetEviction: a budget created with kubectl gets its
// status from the disruption controller; an eviction it does not allow is
// refused with 429 and upstream's message and cause (as `kubectl drain`
// sees it through client-go's policy/v1 Evict); after a scale-up the
// eviction goes through, using up the allowed disruption; maxUnavailable
// as a percentage counts the Deployment's scale.
func TestDisruptionBudgetEviction(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fakeAgent(t, ns)
	d, err := env.client.AppsV1().Deployments(ns).Create(ctx, newDeployment(ns, 2, "busybox:1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "two ready pods", func() (bool, error) { return len(readyPods(t, ns)) == 2, nil })

	kubectl(t, "-n", ns, "create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=2")
	pdb := waitBudget(t, ns, "web", "the budget's status", func(p *policyv1.PodDisruptionBudget) bool {
		return p.Status.CurrentHealthy == 2 && p.Status.DesiredHealthy == 2 && p.Status.ExpectedPods == 2
	})
	if pdb.Status.DisruptionsAllowed != 0 {
		t.Fatalf("disruptionsAllowed %d, want 0", pdb.Status.DisruptionsAllowed)
	}
	if c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c == nil ||
		c.Status != metav1.ConditionFalse || c.Reason != policyv1.InsufficientPodsReason {
		t.Errorf("DisruptionAllowed condition %+v, want False InsufficientPods", c)
	}
	out := kubectl(t, "-n", ns, "get", "pdb", "web")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 ||
		strings.Join(strings.Fields(lines[0]), " ") != "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE" ||
		strings.Join(strings.Fields(lines[1])[:4], " ") != "web 2 N/A 0" {
		t.Errorf("kubectl get pdb:\n%s", out)
	}

	victim := readyPods(t, ns)[0]
	evict := func() error {
		return env.client.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: ns}})
	}
	err = evict()
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Fatalf("eviction against the budget: %v", err)
	}
	causes := err.(apierrors.APIStatus).Status().Details.Causes
	if len(causes) != 1 || causes[0].Type != policyv1.DisruptionBudgetCause || causes[0].Message != "The disruption budget web needs 2 healthy pods and has 2 currently" {
		t.Errorf("causes %+v, want the DisruptionBudget cause", causes)
	}
	if p, err := env.client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("refused eviction touched the pod: %v %v", err, p.DeletionTimestamp)
	}

	if _, err := env.client.AppsV1().Deployments(ns).Patch(ctx, d.Name, types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBudget(t, ns, "web", "one disruption allowed after the scale-up", func(p *policyv1.PodDisruptionBudget) bool {
		return p.Status.CurrentHealthy == 3 && p.Status.DisruptionsAllowed == 1
	})
	if err := evict(); err != nil {
		t.Fatalf("eviction the budget allows: %v", err)
	}
	harness.Eventually(t, "the evicted pod gone", func() (bool, error) {
		_, err := env.client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// The ReplicaSet replaces it; the budget recovers.
	waitBudget(t, ns, "web", "the budget recovered", func(p *policyv1.PodDisruptionBudget) bool {
		return p.Status.CurrentHealthy == 3 && p.Status.DisruptionsAllowed == 1 && len(p.Status.DisruptedPods) == 0
	})

	// maxUnavailable 50% of the Deployment's 3: desired 3-2 = 1.
	if _, err := env.client.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"minAvailable":null,"maxUnavailable":"50%"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBudget(t, ns, "web", "maxUnavailable from the scale", func(p *policyv1.PodDisruptionBudget) bool {
		return p.Status.ExpectedPods == 3 && p.Status.DesiredHealthy == 1 && p.Status.DisruptionsAllowed == 2
	})
}

// TestEvictionDecrementsBudget: an allowed eviction takes the disruption
// at once (disruptionsAllowed decremented, the pod recorded in
// disruptedPods, seen on a watch of the budget) and the next eviction is
// refused; a dry run only checks. Bare pods: nothing replaces the evicted one.
func TestEvictionDecrementsBudget(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fakeAgent(t, ns)
	for _, name := range []string{"a", "b", "c"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}}
		if _, err := env.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, "three ready pods", func() (bool, error) { return len(readyPods(t, ns)) == 3, nil })
	minAvailable := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := env.client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := waitBudget(t, ns, "web", "one disruption allowed", func(p *policyv1.PodDisruptionBudget) bool { return p.Status.DisruptionsAllowed == 1 })
	evictions := env.client.PolicyV1().Evictions(ns)
	if err := evictions.Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}); err != nil {
		t.Fatalf("dry-run eviction: %v", err)
	}
	if p, err := env.client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil ||
		p.ResourceVersion != ready.ResourceVersion {
		t.Fatalf("a dry run wrote the budget: %v", err)
	}
	w, err := env.client.PolicyV1().PodDisruptionBudgets(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: ready.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := evictions.Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}}); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	ev := <-w.ResultChan()
	got, ok := ev.Object.(*policyv1.PodDisruptionBudget)
	if !ok || got.Status.DisruptionsAllowed != 0 {
		t.Fatalf("first change after the eviction: %v %+v", ev.Type, ev.Object)
	}
	if _, ok := got.Status.DisruptedPods["a"]; !ok {
		t.Errorf("disruptedPods %v lacks the evicted pod", got.Status.DisruptedPods)
	}
	if err := evictions.Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns}}); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second eviction: want 429, got %v", err)
	}
}
