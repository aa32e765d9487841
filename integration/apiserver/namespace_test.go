package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestNamespaceLifecycle: deleting a namespace marks it Terminating, its
// pods are deleted first (a pod on a node gracefully, waiting for its
// agent) and the rest of its content only once no pod is left (upstream's
// OrderedNamespaceDeletion), its conditions say what is left, nothing new
// may be created in it meanwhile, and once empty it is gone. The bootstrap
// namespaces exist and cannot be deleted.
func TestNamespaceLifecycle(t *testing.T) {
	ctx := context.Background()
	cs := shared.Client(t)
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("bootstrap namespace %s: %v", name, err)
		}
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "kube-system", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("deleting kube-system: %v, want 403", err)
	}

	name := fmt.Sprintf("lifecycle-%d", time.Now().UnixNano()%100000)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := testPod("bound")
	bound.Spec.NodeName = "some-node"
	if _, err := cs.CoreV1().Pods(name).Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("deleted namespace: %v phase %q", err, ns.Status.Phase)
	}
	// Updating a terminating namespace keeps it (its spec.finalizers do).
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"seen":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err != nil || ns.Labels["seen"] != "yes" {
		t.Fatalf("terminating namespace after a label update: %v", err)
	}
	_, err = cs.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") {
		t.Fatalf("create in a terminating namespace: %v, want 403", err)
	}
	// The controller starts the pod's graceful deletion and says the pod is
	// what is left.
	poll(t, "pod terminating and reported remaining", func() bool {
		p, podErr := cs.CoreV1().Pods(name).Get(ctx, "bound", metav1.GetOptions{})
		ns, nsErr := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return podErr == nil && p.DeletionTimestamp != nil && nsErr == nil &&
			hasNamespaceCondition(ns, corev1.NamespaceContentRemaining, corev1.ConditionTrue, "pods. has 1 resource instances") &&
			hasNamespaceCondition(ns, corev1.NamespaceDeletionContentFailure, corev1.ConditionFalse, "")
	})
	// Nothing else is deleted while a pod is left.
	if _, err := cs.CoreV1().ConfigMaps(name).Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Fatalf("configmap deleted while a pod is still terminating: %v", err)
	}
	// The agent's final delete.
	if err := cs.CoreV1().Pods(name).Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	poll(t, "namespace removed", func() bool {
		_, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := cs.CoreV1().ConfigMaps(name).Get(ctx, "c", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("configmap of the removed namespace: %v, want not found", err)
	}
}

// hasNamespaceCondition reports whether ns has condition t with status s
// and a message containing msg.
func hasNamespaceCondition(ns *corev1.Namespace, t corev1.NamespaceConditionType, s corev1.ConditionStatus, msg string) bool {
	for _, c := range ns.Status.Conditions {
		if c.Type == t {
			return c.Status == s && strings.Contains(c.Message, msg)
		}
	}
	return false
}

// poll checks cond until it holds, for at most 30s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
