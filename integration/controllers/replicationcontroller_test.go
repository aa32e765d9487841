package controllers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"berth/integration/harness"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const rcManifest = `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: 3
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: c, image: "img:v1"}
`

// TestReplicationControllerThroughKubectl creates a replication controller
// as a user would (its selector and labels defaulted from the template),
// reads it back with kubectl get rc, scales it with kubectl scale, and
// deletes it with and without propagation (core/v1 orphans by default).
func TestReplicationControllerThroughKubectl(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fakeAgent(t, ns)
	manifest := filepath.Join(t.TempDir(), "rc.yaml")
	if err := os.WriteFile(manifest, []byte(rcManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "-n", ns, "apply", "-f", manifest)
	rc, err := env.client.CoreV1().ReplicationControllers(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" {
		t.Fatalf("selector %v and labels %v not defaulted from the template", rc.Spec.Selector, rc.Labels)
	}
	ownedPods := func() []corev1.Pod {
		var out []corev1.Pod
		for _, p := range activePods(t, ns) {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rc.UID && ref.Kind == "ReplicationController" && ref.APIVersion == "v1" {
				out = append(out, p)
			}
		}
		return out
	}
	harness.Eventually(t, "3 ready pods controlled by the replication controller", func() (bool, error) {
		cur, err := env.client.CoreV1().ReplicationControllers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(ownedPods()) == 3 && cur.Status.Replicas == 3 && cur.Status.ReadyReplicas == 3 &&
			cur.Status.AvailableReplicas == 3 && cur.Status.ObservedGeneration == cur.Generation, nil
	})

	out := kubectl(t, "-n", ns, "get", "rc", "-o", "wide")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR" {
		t.Fatalf("kubectl get rc -o wide:\n%s", out)
	}
	if f := strings.Fields(lines[1]); f[0] != "web" || f[1] != "3" || f[2] != "3" || f[3] != "3" || f[5] != "c" || f[6] != "img:v1" || f[7] != "app=web" {
		t.Fatalf("kubectl get rc row: %q", lines[1])
	}

	kubectl(t, "-n", ns, "scale", "rc/web", "--replicas=1")
	harness.Eventually(t, "scaled down to one pod", func() (bool, error) {
		cur, err := env.client.CoreV1().ReplicationControllers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(ownedPods()) == 1 && cur.Status.Replicas == 1, nil
	})
	scale, err := env.client.CoreV1().ReplicationControllers(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
		t.Fatalf("scale %+v (%v)", scale, err)
	}
	if out := kubectl(t, "explain", "rc.spec.replicas"); !strings.Contains(out, "ReplicationController") || !strings.Contains(out, "replicas") {
		t.Fatalf("kubectl explain rc.spec.replicas:\n%s", out)
	}

	// Deleted through core/v1 without a propagation policy, its pod is
	// orphaned (upstream's default for replication controllers).
	survivor := ownedPods()[0]
	if err := env.client.CoreV1().ReplicationControllers(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "the pod orphaned, not deleted", func() (bool, error) {
		p, err := env.client.CoreV1().Pods(ns).Get(ctx, survivor.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, err = env.client.CoreV1().ReplicationControllers(ns).Get(ctx, "web", metav1.GetOptions{})
		return p.DeletionTimestamp == nil && len(p.OwnerReferences) == 0 && err != nil, nil
	})

	// Recreated, it adopts the orphan; kubectl delete (background) then
	// removes the pod with it.
	kubectl(t, "-n", ns, "apply", "-f", manifest)
	if rc, err = env.client.CoreV1().ReplicationControllers(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "the orphan adopted among 3 pods", func() (bool, error) {
		owned := ownedPods()
		adopted := false
		for _, p := range owned {
			adopted = adopted || p.UID == survivor.UID
		}
		return len(owned) == 3 && adopted, nil
	})
	kubectl(t, "-n", ns, "delete", "rc/web")
	harness.Eventually(t, "the pods deleted with the replication controller", func() (bool, error) {
		return len(activePods(t, ns)) == 0, nil
	})
}
