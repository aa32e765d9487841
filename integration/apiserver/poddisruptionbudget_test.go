package apiserver_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestPodDisruptionBudgetsAPI: policy/v1 poddisruptionbudgets in discovery
// (short name pdb, /status), upstream's validation, a status written only
// through /status, the NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED
// DISRUPTIONS AGE table, and kubectl explain from the OpenAPI documents.
func TestPodDisruptionBudgetsAPI(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	ns := newNamespace(t, shared)
	res, err := cs.Discovery().ServerResourcesForGroupVersion("policy/v1")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, r := range res.APIResources {
		found[r.Name] = true
		if r.Name == "poddisruptionbudgets" && (!r.Namespaced || strings.Join(r.ShortNames, ",") != "pdb") {
			t.Errorf("poddisruptionbudgets: %+v", r)
		}
	}
	if !found["poddisruptionbudgets"] || !found["poddisruptionbudgets/status"] {
		t.Fatalf("policy/v1 resources: %+v", res.APIResources)
	}
	pdbs := cs.PolicyV1().PodDisruptionBudgets(ns)
	one, half := intstr.FromInt32(1), intstr.FromString("50%")
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	_, err = pdbs.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "both"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, MaxUnavailable: &one, Selector: sel}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec", "minAvailable and maxUnavailable cannot be both set")

	created, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:   policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &half, Selector: sel},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 9}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.DisruptionsAllowed != 0 || created.Generation != 1 {
		t.Errorf("create kept status %+v / generation %d", created.Status, created.Generation)
	}
	created.Status.DisruptionsAllowed = 3
	st, err := pdbs.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil || st.Status.DisruptionsAllowed != 3 {
		t.Fatalf("update status: %v %+v", err, st)
	}
	st.Status.DisruptionsAllowed = -1
	_, err = pdbs.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	wantInvalid(t, err, "status.disruptionsAllowed", "must be greater than or equal to 0")

	out := shared.mustKubectl(t, "1.32", "", "-n", ns, "get", "pdb", "web")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE" ||
		strings.Join(strings.Fields(lines[1])[:4], " ") != "web N/A 50% 3" {
		t.Errorf("kubectl get pdb:\n%s", out)
	}
	if out := shared.mustKubectl(t, "1.32", "", "explain", "pdb.spec.unhealthyPodEvictionPolicy"); !strings.Contains(out, "unhealthyPodEvictionPolicy") {
		t.Errorf("explain: %s", out)
	}
}

// TestEvictionWithTwoBudgets: a running pod two budgets cover cannot be
// evicted (500, upstream's message); a pending one can.
func TestEvictionWithTwoBudgets(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	ns := newNamespace(t, shared)
	one := intstr.FromInt32(1)
	for _, name := range []string{"first", "second"} {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := cs.CoreV1().Pods(ns)
	for _, name := range []string{"running", "pending"} {
		p := testPod(name)
		p.Labels = map[string]string{"app": "web"}
		created, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if name == "running" {
			created.Status.Phase = corev1.PodRunning
			if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: ns}})
	if !isCode(err, 500) || !strings.Contains(err.Error(), "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.") {
		t.Fatalf("eviction under two budgets: %v", err)
	}
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: ns}}); err != nil {
		t.Fatalf("pending pod's eviction: %v", err)
	}
}

// isCode reports whether err is an API status error with code.
func isCode(err error, code int32) bool {
	s, ok := err.(apierrors.APIStatus)
	return ok && s.Status().Code == code
}
