package controllers

import (
	"context"
	"testing"

	"berth/integration/harness"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestReplicaSetCreatesAdoptsAndReports(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	// An orphan that matches the selector is adopted rather than duplicated.
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: ns, Labels: map[string]string{"app": "web"}},
		Spec: podTemplate("img:v1").Spec}
	if _, err := env.client.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{Replicas: int32p(3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate("img:v1")},
	}
	rs, err := env.client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "3 pods controlled by the replicaset, the orphan adopted", func() (bool, error) {
		pods := activePods(t, ns)
		owned := 0
		for _, p := range pods {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID {
				owned++
			}
		}
		adopted := false
		for _, p := range pods {
			if p.Name == "orphan" && metav1.GetControllerOf(&p) != nil {
				adopted = true
			}
		}
		return len(pods) == 3 && owned == 3 && adopted, nil
	})
	harness.Eventually(t, "status replicas 3, ready 0", func() (bool, error) {
		cur := getRS(t, ns, "web")
		return cur.Status.Replicas == 3 && cur.Status.ReadyReplicas == 0 && cur.Status.FullyLabeledReplicas == 3 && cur.Status.ObservedGeneration == cur.Generation, nil
	})

	// Make two pods ready: the status follows, and scaling down to 2
	// removes the not-ready one.
	pods := activePods(t, ns)
	keep := map[types.UID]bool{}
	for _, p := range pods[:2] {
		if err := makeReady(ctx, &p); err != nil {
			t.Fatal(err)
		}
		keep[p.UID] = true
	}
	harness.Eventually(t, "ready and available 2", func() (bool, error) {
		cur := getRS(t, ns, "web")
		return cur.Status.ReadyReplicas == 2 && cur.Status.AvailableReplicas == 2, nil
	})
	cur := getRS(t, ns, "web")
	cur.Spec.Replicas = int32p(2)
	if _, err := env.client.AppsV1().ReplicaSets(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "the not-ready pod deleted on scale-down", func() (bool, error) {
		pods := activePods(t, ns)
		if len(pods) != 2 {
			return false, nil
		}
		for _, p := range pods {
			if !keep[p.UID] {
				return false, nil
			}
		}
		return true, nil
	})

	// A pod relabelled out of the selector is released and replaced.
	victim := activePods(t, ns)[0]
	victim.Labels = map[string]string{"app": "debug"}
	if _, err := env.client.CoreV1().Pods(ns).Update(ctx, &victim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "relabelled pod released and replaced", func() (bool, error) {
		p, err := env.client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		matching := 0
		for _, q := range activePods(t, ns) {
			if q.Labels["app"] == "web" {
				matching++
			}
		}
		return metav1.GetControllerOf(p) == nil && matching == 2, nil
	})
}
