package controllers

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"berth/integration/harness"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

const stsManifest = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: nginx
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: "img:v1"
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// stsPod returns the live pod name of ns, nil when there is none.
func stsPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := env.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if p.DeletionTimestamp != nil {
		return nil
	}
	return p
}

// stsImages maps each live pod of ns to its image.
func stsImages(t *testing.T, ns string) map[string]string {
	out := map[string]string{}
	for _, p := range activePods(t, ns) {
		out[p.Name] = p.Spec.Containers[0].Image
	}
	return out
}

// TestStatefulSetThroughKubectl runs a stateful set as a user would: pods
// come up one at a time in ordinal order (web-1 only once web-0 is ready),
// each with its hostname, subdomain and own claim from the template; kubectl
// get and scale (down in reverse ordinal order, claims kept); a rolling
// update held at a partition, then completed; rollout history and undo.
func TestStatefulSetThroughKubectl(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	manifest := filepath.Join(t.TempDir(), "sts.yaml")
	if err := os.WriteFile(manifest, []byte(stsManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "-n", ns, "apply", "-f", manifest)

	// Ordered start: each pod appears only after its predecessor is ready.
	for i, name := range []string{"web-0", "web-1", "web-2"} {
		var p *corev1.Pod
		harness.Eventually(t, name+" created", func() (bool, error) { p = stsPod(t, ns, name); return p != nil, nil })
		if i < 2 {
			if next := stsPod(t, ns, []string{"web-1", "web-2"}[i]); next != nil {
				t.Fatalf("%s exists before %s is ready", next.Name, name)
			}
		}
		if p.Spec.Hostname != name || p.Spec.Subdomain != "nginx" || p.Labels[appsv1.StatefulSetPodNameLabel] != name || p.Labels[appsv1.PodIndexLabel] != name[4:] {
			t.Fatalf("%s identity: hostname %q subdomain %q labels %v", name, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
		}
		if len(p.Spec.Volumes) == 0 || p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-"+name {
			t.Fatalf("%s volumes %+v", name, p.Spec.Volumes)
		}
		if _, err := env.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-"+name, metav1.GetOptions{}); err != nil {
			t.Fatalf("claim of %s: %v", name, err)
		}
		if err := makeReady(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	fakeAgent(t, ns)
	out := kubectl(t, "-n", ns, "rollout", "status", "statefulset/web", "--timeout=60s")
	if !strings.Contains(out, "roll out complete") && !strings.Contains(out, "rolling update complete") {
		t.Fatalf("rollout status: %s", out)
	}
	get := kubectl(t, "-n", ns, "get", "sts", "web")
	lines := strings.Split(strings.TrimSpace(get), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "NAME READY AGE" || !strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "web 3/3") {
		t.Fatalf("kubectl get sts:\n%s", get)
	}

	// Scale down: the highest ordinal goes first; the claims stay (Retain).
	wctx, cancel := context.WithCancel(ctx)
	w, err := env.client.CoreV1().Pods(ns).Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, "-n", ns, "scale", "statefulset/web", "--replicas=1")
	var deleted []string
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Deleted {
			deleted = append(deleted, p.Name)
			if len(deleted) == 2 {
				break
			}
		}
	}
	cancel()
	w.Stop()
	if !slices.Equal(deleted, []string{"web-2", "web-1"}) {
		t.Fatalf("scale-down deleted %v, want [web-2 web-1]", deleted)
	}
	claims, err := env.client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) != 3 {
		t.Fatalf("claims after scale-down: %d (%v)", len(claims.Items), err)
	}
	kubectl(t, "-n", ns, "scale", "statefulset/web", "--replicas=3")
	kubectl(t, "-n", ns, "rollout", "status", "statefulset/web", "--timeout=60s")

	// A rolling update held at partition 2 replaces web-2 only.
	kubectl(t, "-n", ns, "patch", "statefulset/web", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}`)
	kubectl(t, "-n", ns, "annotate", "statefulset/web", "kubernetes.io/change-cause=upgrade to v2")
	kubectl(t, "-n", ns, "set", "image", "statefulset/web", "c=img:v2")
	want := map[string]string{"web-0": "img:v1", "web-1": "img:v1", "web-2": "img:v2"}
	harness.Eventually(t, "web-2 updated, web-0 and web-1 held by the partition", func() (bool, error) {
		set, err := env.client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := set.Status
		return mapsEqual(stsImages(t, ns), want) && s.UpdatedReplicas == 1 && s.CurrentReplicas == 2 && s.ReadyReplicas == 3 &&
			s.CurrentRevision != s.UpdateRevision, nil
	})
	kubectl(t, "-n", ns, "patch", "statefulset/web", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
	kubectl(t, "-n", ns, "rollout", "status", "statefulset/web", "--timeout=60s")
	want = map[string]string{"web-0": "img:v2", "web-1": "img:v2", "web-2": "img:v2"}
	harness.Eventually(t, "every pod at img:v2 and the update revision current", func() (bool, error) {
		set, err := env.client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return mapsEqual(stsImages(t, ns), want) && set.Status.CurrentRevision == set.Status.UpdateRevision && set.Status.CurrentReplicas == 3, nil
	})
	hist := kubectl(t, "-n", ns, "rollout", "history", "statefulset/web")
	if !strings.Contains(hist, "upgrade to v2") {
		t.Fatalf("rollout history:\n%s", hist)
	}
	kubectl(t, "-n", ns, "rollout", "undo", "statefulset/web")
	kubectl(t, "-n", ns, "rollout", "status", "statefulset/web", "--timeout=60s")
	want = map[string]string{"web-0": "img:v1", "web-1": "img:v1", "web-2": "img:v1"}
	harness.Eventually(t, "rolled back to img:v1", func() (bool, error) { return mapsEqual(stsImages(t, ns), want), nil })
	revs, err := env.client.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(revs.Items) != 2 {
		t.Fatalf("controller revisions %d (%v)", len(revs.Items), err)
	}
	maxRev := int64(0)
	for _, r := range revs.Items {
		maxRev = max(maxRev, r.Revision)
	}
	if maxRev != 3 {
		t.Fatalf("after undo the highest revision is %d, want 3 (v1's renumbered)", maxRev)
	}
}

// TestStatefulSetClaimRetention: with whenScaled Delete a scaled-down pod's
// claim is handed to the pod and goes with it; whenDeleted Delete makes the
// set the claims' controller.
func TestStatefulSetClaimRetention(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fakeAgent(t, ns)
	manifest := filepath.Join(t.TempDir(), "sts.yaml")
	body := strings.Replace(stsManifest, "  serviceName: nginx\n", "  serviceName: nginx\n  podManagementPolicy: Parallel\n  persistentVolumeClaimRetentionPolicy: {whenScaled: Delete, whenDeleted: Delete}\n", 1)
	if err := os.WriteFile(manifest, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "-n", ns, "apply", "-f", manifest)
	kubectl(t, "-n", ns, "rollout", "status", "statefulset/web", "--timeout=60s")
	set, err := env.client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := env.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(c); ref == nil || ref.UID != set.UID {
		t.Fatalf("claim owners %+v, want the stateful set as controller", c.OwnerReferences)
	}
	kubectl(t, "-n", ns, "scale", "statefulset/web", "--replicas=1")
	harness.Eventually(t, "the claims of the scaled-down pods owned by their pods", func() (bool, error) {
		for _, name := range []string{"data-web-1", "data-web-2"} {
			c, err := env.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue // already collected with its pod
			}
			if err != nil {
				return false, err
			}
			if ref := metav1.GetControllerOf(c); ref == nil || ref.Kind != "Pod" {
				return false, nil
			}
		}
		return true, nil
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
