package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	"berth/integration/harness"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestDeploymentLifecycle: a Deployment applied with kubectl becomes a
// ReplicaSet and pods the in-process scheduler binds to the nodes; it rolls
// out once the pods are ready, scales, and its deletion removes the
// ReplicaSet and pods (garbage collection), unless --cascade=orphan.
func TestDeploymentLifecycle(t *testing.T) {
	ctx := context.Background()
	c := shared.Client(t)
	nodes := addNodes(t, c, "deploy-node", 3)
	ns := newNamespace(t, c)
	fakeAgent(t, c, ns)

	shared.mustKubectl(t, deploymentYAML(ns, "web", 3), "apply", "-f", "-")
	bound := func(want int) func() (bool, error) {
		return func() (bool, error) {
			pods := podsOf(t, c, ns)
			n := 0
			for _, p := range pods {
				if p.Spec.NodeName != "" {
					if !slices.Contains(nodes, p.Spec.NodeName) {
						t.Fatalf("pod %s bound to unknown node %q", p.Name, p.Spec.NodeName)
					}
					n++
				}
			}
			return n == want && len(pods) == want, nil
		}
	}
	harness.Eventually(t, "3 pods bound to nodes", bound(3))
	out := shared.mustKubectl(t, "", "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
	if !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status: %s", out)
	}
	// The scheduler's events.k8s.io events are core events too.
	harness.Eventually(t, "a Scheduled event", func() (bool, error) {
		evs, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
		return err == nil && len(evs.Items) > 0, err
	})

	pod := podsOf(t, c, ns)[0]
	out = shared.mustKubectl(t, "", "-n", ns, "describe", "pod", pod.Name)
	if !strings.Contains(out, "Successfully assigned "+ns+"/"+pod.Name+" to "+pod.Spec.NodeName) {
		t.Fatalf("kubectl describe pod lacks the scheduler's event:\n%s", out)
	}
	// The in-process scheduler's metrics are on the server's /metrics.
	body, err := c.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil || !strings.Contains(string(body), `scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}`) {
		t.Fatalf("/metrics lacks the scheduler's attempts (err %v)", err)
	}

	shared.mustKubectl(t, "", "-n", ns, "scale", "deployment/web", "--replicas=5")
	harness.Eventually(t, "5 pods bound to nodes", bound(5))
	shared.mustKubectl(t, "", "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")

	// Background cascade: the ReplicaSet and its pods go.
	shared.mustKubectl(t, "", "-n", ns, "delete", "deployment", "web")
	harness.Eventually(t, "replicasets and pods garbage collected", func() (bool, error) {
		rss, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(rss.Items) == 0 && len(pods.Items) == 0, nil
	})

	// Orphan cascade: the ReplicaSet and pods stay, without owner.
	shared.mustKubectl(t, deploymentYAML(ns, "kept", 2), "apply", "-f", "-")
	harness.Eventually(t, "2 pods bound", bound(2))
	shared.mustKubectl(t, "", "-n", ns, "delete", "deployment", "kept", "--cascade=orphan")
	harness.Eventually(t, "the deployment gone", func() (bool, error) {
		_, err := c.AppsV1().Deployments(ns).Get(ctx, "kept", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	harness.Eventually(t, "the replicaset orphaned", func() (bool, error) {
		rss, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(rss.Items) != 1 {
			return false, err
		}
		return len(rss.Items[0].OwnerReferences) == 0, nil
	})
	if pods := podsOf(t, c, ns); len(pods) != 2 {
		t.Fatalf("%d pods left after orphaning, want 2", len(pods))
	}
}

// TestForegroundDeletion: DELETE with propagationPolicy Foreground marks
// the owner with the foregroundDeletion finalizer and keeps it until its
// blocking dependents are gone.
func TestForegroundDeletion(t *testing.T) {
	ctx := context.Background()
	c := shared.Client(t)
	ns := newNamespace(t, c)
	cms := c.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The dependent's own finalizer holds it, and so the owner.
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dependent", Finalizers: []string{"test.berth.dev/hold"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true)}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shared.mustKubectl(t, "", "-n", ns, "delete", "configmap", "owner", "--cascade=foreground", "--wait=false")
	got, err := cms.Get(ctx, "owner", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("foreground-deleted owner: %v, %+v", err, got)
	}
	harness.Eventually(t, "the dependent marked for deletion", func() (bool, error) {
		d, err := cms.Get(ctx, "dependent", metav1.GetOptions{})
		return err == nil && d.DeletionTimestamp != nil, err
	})
	if _, err := cms.Get(ctx, "owner", metav1.GetOptions{}); err != nil {
		t.Fatalf("owner gone before its blocking dependent: %v", err)
	}
	d, err := cms.Get(ctx, "dependent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Finalizers = nil
	if _, err := cms.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "owner and dependent gone", func() (bool, error) {
		_, err1 := cms.Get(ctx, "owner", metav1.GetOptions{})
		_, err2 := cms.Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2), nil
	})
}

// TestNamespaceDeletion: deleting a namespace removes its content, then it;
// creates in it while it terminates are refused with NamespaceTerminating.
func TestNamespaceDeletion(t *testing.T) {
	ctx := context.Background()
	c := shared.Client(t)
	addNodes(t, c, "ns-node", 1)
	ns := newNamespace(t, c)
	fakeAgent(t, c, ns)
	shared.mustKubectl(t, deploymentYAML(ns, "web", 2), "apply", "-f", "-")
	shared.mustKubectl(t, "", "-n", ns, "create", "configmap", "cfg", "--from-literal=a=b")
	harness.Eventually(t, "2 pods", func() (bool, error) { return len(podsOf(t, c, ns)) == 2, nil })
	// A finalizer holds a configmap, so the namespace stays Terminating
	// long enough to try a create in it.
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"test.berth.dev/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shared.mustKubectl(t, "", "delete", "namespace", ns, "--wait=false")
	harness.Eventually(t, "the namespace terminating", func() (bool, error) {
		n, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err == nil && n.Status.Phase == corev1.NamespaceTerminating, err
	})
	_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) ||
		!strings.Contains(err.Error(), "unable to create new content in namespace "+ns+" because it is being terminated") {
		t.Fatalf("create in a terminating namespace: %v, want Forbidden with cause %s", err, corev1.NamespaceTerminatingCause)
	}
	harness.Eventually(t, "the namespace's pods and deployment deleted", func() (bool, error) {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ds, err := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0 && len(ds.Items) == 0, err
	})
	held, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held.Finalizers = nil
	if _, err := c.CoreV1().ConfigMaps(ns).Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "the namespace gone", func() (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}
