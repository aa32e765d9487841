package apiserver_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// TestServerSideApply: kubectl apply --server-side creates and updates,
// managedFields record the managers, a field another manager owns
// conflicts (409) unless forced; client-go's typed Apply works too.
func TestServerSideApply(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, shared)
	k := func(stdin string, args ...string) (string, string, error) {
		return shared.kubectl(t, "1.32", stdin, append([]string{"-n", ns}, args...)...)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  labels: {owner: apply}\ndata:\n  a: \"1\"\n"
	if out, errOut, err := k(cm, "apply", "--server-side", "-f", "-"); err != nil || !strings.Contains(out, "serverside-applied") {
		t.Fatalf("apply --server-side: %v %s %s", err, out, errOut)
	}
	cs := shared.Client(t)
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "ssa", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "1" || len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != "kubectl" || got.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("after apply: %v %+v", err, got)
	}
	if _, _, err := k("", "label", "configmap", "ssa", "owner=label", "--overwrite"); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := k(cm, "apply", "--server-side", "-f", "-"); err == nil || !strings.Contains(errOut, `conflict with "kubectl-label"`) {
		t.Fatalf("apply over another manager's field: %v %s, want a conflict", err, errOut)
	}
	if _, errOut, err := k(cm, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		t.Fatalf("forced apply: %v %s", err, errOut)
	}
	got, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "ssa", metav1.GetOptions{})
	if err != nil || got.Labels["owner"] != "apply" {
		t.Fatalf("after forced apply: %v labels %v", err, got.Labels)
	}

	// client-go typed Apply, and the fieldManager it must name.
	ac := corev1ac.ConfigMap("typed", ns).WithData(map[string]string{"k": "v"})
	if _, err := cs.CoreV1().ConfigMaps(ns).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: "test"}); err != nil {
		t.Fatalf("typed apply: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Apply(ctx, ac, metav1.ApplyOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("apply without a field manager: %v, want 422", err)
	}
}
