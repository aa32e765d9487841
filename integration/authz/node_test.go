package authz

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"berth/integration/harness"
)

// createPod creates p in ns as the admin, retrying while the namespace's
// default service account does not exist yet.
func createPod(t *testing.T, ns string, p *corev1.Pod) {
	t.Helper()
	harness.WaitFor(t, 30*time.Second, "pod "+p.Name+" created", func() (bool, string) {
		_, err := shared.admin.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return false, err.Error()
		}
		return true, ""
	})
}

// A node credential reads its own pods and what they reference, and is
// refused another node's; it writes only its own Node and Lease.
func TestNodeAuthorizer(t *testing.T) {
	ctx := context.Background()
	ns := shared.newNamespace(t, "nodes")
	for _, name := range []string{"s1", "s2"} {
		if _, err := shared.admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string][]byte{"k": []byte(name)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := shared.admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + name}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	volumes := func(secret string) []corev1.Volume {
		return []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm-" + secret}}}},
		}
	}
	createPod(t, ns, pod("on-n1", "authz-n1", volumes("s1")...))
	createPod(t, ns, pod("on-n2", "authz-n2", volumes("s2")...))

	n1 := clientFor(t, shared.certConfig(t, "system:node:authz-n1", "system:nodes"))
	n2 := clientFor(t, shared.certConfig(t, "system:node:authz-n2", "system:nodes"))

	// The graph learns the pods through a watch: poll for the first grant.
	harness.WaitFor(t, 30*time.Second, "node authz-n1 to read its pod's secret", func() (bool, string) {
		_, err := n1.CoreV1().Secrets(ns).Get(ctx, "s1", metav1.GetOptions{})
		return err == nil, errString(err)
	})
	s, err := n1.CoreV1().Secrets(ns).Get(ctx, "s1", metav1.GetOptions{})
	if err != nil || string(s.Data["k"]) != "s1" {
		t.Fatalf("n1 get own secret: %v %v", s, err)
	}
	if _, err := n1.CoreV1().ConfigMaps(ns).Get(ctx, "cm-s1", metav1.GetOptions{}); err != nil {
		t.Fatalf("n1 get own configmap: %v", err)
	}
	_, err = n1.CoreV1().Secrets(ns).Get(ctx, "s2", metav1.GetOptions{})
	want := `secrets "s2" is forbidden: User "system:node:authz-n1" cannot get resource "secrets" in API group "" in the namespace "` + ns +
		`": no relationship found between node 'authz-n1' and this object`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("n1 get n2's secret: %v\nwant %q", err, want)
	}
	if _, err := n1.CoreV1().ConfigMaps(ns).Get(ctx, "cm-s2", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("n1 get n2's configmap: %v, want 403", err)
	}
	if _, err := n1.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("n1 list secrets: %v, want 403", err)
	}
	harness.WaitFor(t, 30*time.Second, "node authz-n2 to read its pod's secret", func() (bool, string) {
		_, err := n2.CoreV1().Secrets(ns).Get(ctx, "s2", metav1.GetOptions{})
		return err == nil, errString(err)
	})
	if _, err := n2.CoreV1().Secrets(ns).Get(ctx, "s1", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("n2 get n1's secret: %v, want 403", err)
	}

	// Pods: its own by name and by the spec.nodeName field selector.
	if _, err := n1.CoreV1().Pods(ns).Get(ctx, "on-n1", metav1.GetOptions{}); err != nil {
		t.Fatalf("n1 get own pod: %v", err)
	}
	if _, err := n1.CoreV1().Pods(ns).Get(ctx, "on-n2", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("n1 get n2's pod: %v, want 403", err)
	}
	own, err := n1.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "authz-n1").String()})
	if err != nil || len(own.Items) != 1 || own.Items[0].Name != "on-n1" {
		t.Fatalf("n1 list own pods: %v %v", own, err)
	}
	if _, err := n1.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=authz-n2"}); !apierrors.IsForbidden(err) {
		t.Fatalf("n1 list n2's pods: %v, want 403", err)
	}
	if _, err := n1.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("n1 list all pods: %v, want 403", err)
	}
	// Its pods' status, not another node's.
	patch := []byte(`{"status":{"message":"seen by the node"}}`)
	if _, err := n1.CoreV1().Pods(ns).Patch(ctx, "on-n1", types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("n1 patch own pod status: %v", err)
	}
	if _, err := n1.CoreV1().Pods(ns).Patch(ctx, "on-n2", types.MergePatchType, patch, metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
		t.Fatalf("n1 patch n2's pod status: %v, want 403", err)
	}
	// Events: allowed by the system:node rules.
	if _, err := n1.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "e-"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "on-n1"}, Reason: "Test", Message: "m", Type: "Normal"},
		metav1.CreateOptions{}); err != nil {
		t.Fatalf("n1 create event: %v", err)
	}

	// Its own Node object and Lease only.
	nodeLease := func(c kubernetes.Interface, name string) error {
		_, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	if err := nodeLease(n1, "authz-n1"); err != nil {
		t.Fatalf("n1 create own lease: %v", err)
	}
	t.Cleanup(func() {
		_ = shared.admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), "authz-n1", metav1.DeleteOptions{})
	})
	if _, err := n2.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "authz-n1", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("n2 get n1's lease: %v, want 403", err)
	}
	if _, err := n1.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("n1 list leases elsewhere: %v, want 403", err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "authz-n1"}}
	if _, err := n1.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("n1 register its node: %v", err)
	}
	t.Cleanup(func() {
		_ = shared.admin.CoreV1().Nodes().Delete(context.Background(), "authz-n1", metav1.DeleteOptions{})
	})
	labels := []byte(`{"metadata":{"labels":{"example.com/seen":"yes"}}}`)
	if _, err := n1.CoreV1().Nodes().Patch(ctx, "authz-n1", types.MergePatchType, labels, metav1.PatchOptions{}); err != nil {
		t.Fatalf("n1 patch own node: %v", err)
	}
	_, err = n2.CoreV1().Nodes().Patch(ctx, "authz-n1", types.MergePatchType, labels, metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:node:authz-n2" cannot patch resource "nodes" in API group "" at the cluster scope`) {
		t.Fatalf("n2 patch n1's node: %v, want 403", err)
	}
	// Nothing else: no namespaces, no RBAC.
	if _, err := n1.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("n1 list namespaces: %v, want 403", err)
	}
	if _, err := n1.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("n1 list clusterroles: %v, want 403", err)
	}

	// Deleting the pod ends the relationship.
	if err := shared.admin.CoreV1().Pods(ns).Delete(ctx, "on-n1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 30*time.Second, "node authz-n1 refused the secret of its deleted pod", func() (bool, string) {
		_, err := n1.CoreV1().Secrets(ns).Get(ctx, "s1", metav1.GetOptions{})
		return apierrors.IsForbidden(err), errString(err)
	})
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
