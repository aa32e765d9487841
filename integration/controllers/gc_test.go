package controllers

import (
	"context"
	"fmt"
	"testing"

	"berth/integration/harness"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// withDeployment creates a 2-replica deployment and waits for its pods.
func withDeployment(t *testing.T) string {
	t.Helper()
	ns := namespace(t)
	if _, err := env.client.AppsV1().Deployments(ns).Create(context.Background(), newDeployment(ns, 2, "img:v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "deployment's pods", func() (bool, error) {
		return len(activePods(t, ns)) == 2 && len(deploymentRSs(t, ns)) == 1, nil
	})
	return ns
}

func TestGarbageCollectionBackground(t *testing.T) {
	ns := withDeployment(t)
	kubectl(t, "-n", ns, "delete", "deployment", "web") // background by default
	harness.Eventually(t, "replicasets and pods collected", func() (bool, error) {
		return len(deploymentRSs(t, ns)) == 0 && len(listPods(t, ns)) == 0, nil
	})
}

// deleteOwner deletes deployment web with kubectl's --cascade (orphan or
// foreground): the apiserver adds the orphan / foregroundDeletion
// finalizer the garbage collector acts on.
func deleteOwner(t *testing.T, ns, cascade string) {
	t.Helper()
	kubectl(t, "-n", ns, "delete", "deployment", "web", "--cascade="+cascade, "--wait=false")
}

func TestGarbageCollectionOrphan(t *testing.T) {
	ns := withDeployment(t)
	deleteOwner(t, ns, "orphan")
	harness.Eventually(t, "deployment gone", func() (bool, error) {
		_, err := env.client.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	rss := deploymentRSs(t, ns)
	if len(rss) != 1 || len(rss[0].OwnerReferences) != 0 {
		t.Fatalf("replicaset not orphaned: %+v", rss)
	}
	// The orphaned ReplicaSet keeps its pods (and stays their controller).
	harness.Eventually(t, "pods kept", func() (bool, error) { return len(activePods(t, ns)) == 2, nil })
	for _, p := range activePods(t, ns) {
		if metav1.GetControllerOf(&p) == nil {
			t.Fatalf("pod %s lost its controller", p.Name)
		}
	}
}

func TestGarbageCollectionForeground(t *testing.T) {
	ctx := context.Background()
	ns := withDeployment(t)
	deleteOwner(t, ns, "foreground")
	// The deployment stays (finalizer) until its ReplicaSet is gone.
	harness.Eventually(t, "foreground deletion completes", func() (bool, error) {
		d, err := env.client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if d.DeletionTimestamp == nil {
			t.Fatalf("deployment not being deleted: %+v", d.ObjectMeta)
		}
		return false, nil
	})
	if n := len(deploymentRSs(t, ns)); n != 0 {
		t.Fatalf("%d replicasets survive their foreground-deleted deployment", n)
	}
	// The ReplicaSet itself went in the foreground: its pods first.
	if n := len(listPods(t, ns)); n != 0 {
		t.Fatalf("%d pods survive their foreground-deleted deployment", n)
	}
}

// Three pods owning each other in a circle, all blocking their owner's
// deletion: deleting one in the foreground deletes all three, as upstream's
// collector does (the Conformance spec "should not be blocked by dependency
// circle"): the pod that finds one of its dependents waiting too unblocks
// its owner references first.
func TestGarbageCollectionOwnershipCircle(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	pods := env.client.CoreV1().Pods(ns)
	var created []*corev1.Pod
	for _, name := range []string{"pod1", "pod2", "pod3"} {
		p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, p)
	}
	for i, p := range created {
		owner := created[(i+2)%3] // pod1 ← pod3, pod2 ← pod1, pod3 ← pod2
		patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`, owner.Name, owner.UID)
		if _, err := pods.Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	foreground := metav1.DeletePropagationForeground
	if err := pods.Delete(ctx, "pod1", metav1.DeleteOptions{PropagationPolicy: &foreground, Preconditions: metav1.NewUIDPreconditions(string(created[0].UID))}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "the circle of pods deleted", func() (bool, error) {
		left := listPods(t, ns)
		return len(left) == 0, fmt.Errorf("%d pods left", len(left))
	})
}

func TestNamespaceDeletionEmptiesIt(t *testing.T) {
	ctx := context.Background()
	ns := withDeployment(t)
	if _, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "namespace gone", func() (bool, error) {
		_, err := env.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// Nothing survives: not the deployment's ReplicaSet, nor its pods.
	for what, n := range map[string]int{"replicasets": len(deploymentRSs(t, ns)), "pods": len(listPods(t, ns))} {
		if n != 0 {
			t.Fatalf("%d %s left in deleted namespace %s", n, what, ns)
		}
	}
}

func TestDefaultServiceAccount(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	harness.Eventually(t, "default serviceaccount", func() (bool, error) {
		_, err := env.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err := env.client.CoreV1().ServiceAccounts(ns).Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "default serviceaccount recreated", func() (bool, error) {
		sa, err := env.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil && sa.DeletionTimestamp == nil, nil
	})
}
