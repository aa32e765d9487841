package controllers

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"berth/integration/harness"
)

func newDeployment(ns string, replicas int32, image string) *appsv1.Deployment {
	surge, unavail := intstr.FromInt32(1), intstr.FromInt32(0)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: int32p(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate(image),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}},
		},
	}
}

func deploymentRSs(t *testing.T, ns string) []appsv1.ReplicaSet {
	t.Helper()
	l, err := env.client.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func rsFor(rss []appsv1.ReplicaSet, image string) *appsv1.ReplicaSet {
	for i := range rss {
		if rss[i].Spec.Template.Spec.Containers[0].Image == image {
			return &rss[i]
		}
	}
	return nil
}

func complete(d *appsv1.Deployment) bool {
	st := d.Status
	n := *d.Spec.Replicas
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n
}

func waitComplete(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	harness.Eventually(t, "rollout complete", func() (bool, error) {
		var err error
		d, err = env.client.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
		return err == nil && complete(d), err
	})
	return d
}

// TestDeploymentRollingUpdate follows a rollout of 3 replicas with
// maxSurge 1 / maxUnavailable 0 through every ReplicaSet change: the
// ReplicaSets' spec.replicas never total more than 4 (upstream's
// guarantee, which its e2e rolling checks assert on the ReplicaSets' spec
// too; pod counts may exceed it while pods terminate); then rollout
// status/history and undo through kubectl.
func TestDeploymentRollingUpdate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fakeAgent(t, ns)
	if _, err := env.client.AppsV1().Deployments(ns).Create(ctx, newDeployment(ns, 3, "img:v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := waitComplete(t, ns)
	if d.Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Fatalf("revision = %q, want 1", d.Annotations["deployment.kubernetes.io/revision"])
	}
	rss := deploymentRSs(t, ns)
	if len(rss) != 1 || rss[0].Labels[appsv1.DefaultDeploymentUniqueLabelKey] == "" || !strings.HasSuffix(rss[0].Name, rss[0].Labels[appsv1.DefaultDeploymentUniqueLabelKey]) {
		t.Fatalf("replicasets = %s", describe(rss))
	}
	for _, p := range activePods(t, ns) {
		if p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != rss[0].Labels[appsv1.DefaultDeploymentUniqueLabelKey] {
			t.Fatalf("pod %s lacks the pod-template-hash label: %v", p.Name, p.Labels)
		}
	}

	// Record every (new, old) spec pair while the rollout runs.
	wctx, stop := context.WithCancel(ctx)
	w, err := env.client.AppsV1().ReplicaSets(ns).Watch(wctx, metav1.ListOptions{ResourceVersion: rss[0].ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	sizes := map[string]int32{rss[0].Name: 3}
	var totals []int32
	var trace []string // every event as type name rv spec→total, for the failure message
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			rs, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			mu.Lock()
			sizes[rs.Name] = *rs.Spec.Replicas
			var sum int32
			for _, n := range sizes {
				sum += n
			}
			totals = append(totals, sum)
			trace = append(trace, fmt.Sprintf("%s %s rv=%s gen=%d spec=%d status(replicas/available)=%d/%d → total %d", ev.Type, rs.Name, rs.ResourceVersion, rs.Generation, *rs.Spec.Replicas, rs.Status.Replicas, rs.Status.AvailableReplicas, sum))
			mu.Unlock()
		}
	}()

	kubectl(t, "-n", ns, "annotate", "deployment/web", "kubernetes.io/change-cause=upgrade to v2")
	kubectl(t, "-n", ns, "set", "image", "deployment/web", "c=img:v2")
	out := kubectl(t, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
	if !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status: %s", out)
	}
	d = waitComplete(t, ns)
	stop()
	w.Stop()
	<-done
	mu.Lock()
	if slices.Max(totals) > 4 {
		t.Errorf("pods (spec) exceeded replicas+maxSurge=4: totals %v\n%s", totals, strings.Join(trace, "\n"))
	}
	mu.Unlock()
	rss = deploymentRSs(t, ns)
	v1, v2 := rsFor(rss, "img:v1"), rsFor(rss, "img:v2")
	if v1 == nil || v2 == nil || *v1.Spec.Replicas != 0 || *v2.Spec.Replicas != 3 || v2.Annotations["deployment.kubernetes.io/revision"] != "2" || v2.Annotations["kubernetes.io/change-cause"] != "upgrade to v2" {
		t.Fatalf("after rollout: %s", describe(rss))
	}
	if d.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Fatalf("deployment revision = %q", d.Annotations["deployment.kubernetes.io/revision"])
	}
	var progressing *appsv1.DeploymentCondition
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == appsv1.DeploymentProgressing {
			progressing = &d.Status.Conditions[i]
		}
	}
	if progressing == nil || progressing.Reason != "NewReplicaSetAvailable" || progressing.Status != corev1.ConditionTrue {
		t.Fatalf("progressing = %+v", progressing)
	}
	hist := kubectl(t, "-n", ns, "rollout", "history", "deployment/web")
	if !strings.Contains(hist, "upgrade to v2") || !strings.Contains(hist, "1 ") || !strings.Contains(hist, "2 ") {
		t.Fatalf("rollout history:\n%s", hist)
	}

	// Roll back: the v1 ReplicaSet becomes current with revision 3.
	kubectl(t, "-n", ns, "rollout", "undo", "deployment/web")
	kubectl(t, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
	d = waitComplete(t, ns)
	rss = deploymentRSs(t, ns)
	v1, v2 = rsFor(rss, "img:v1"), rsFor(rss, "img:v2")
	if d.Spec.Template.Spec.Containers[0].Image != "img:v1" || len(rss) != 2 || *v1.Spec.Replicas != 3 || *v2.Spec.Replicas != 0 ||
		v1.Annotations["deployment.kubernetes.io/revision"] != "3" || v1.Annotations["deployment.kubernetes.io/revision-history"] != "1" {
		t.Fatalf("after undo: image %s, %s", d.Spec.Template.Spec.Containers[0].Image, describe(rss))
	}
}

func TestDeploymentPauseResume(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fakeAgent(t, ns)
	if _, err := env.client.AppsV1().Deployments(ns).Create(ctx, newDeployment(ns, 2, "img:v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitComplete(t, ns)
	kubectl(t, "-n", ns, "rollout", "pause", "deployment/web")
	kubectl(t, "-n", ns, "set", "image", "deployment/web", "c=img:v2")
	harness.Eventually(t, "paused condition", func() (bool, error) {
		d, err := env.client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Reason == "DeploymentPaused" && d.Status.ObservedGeneration == d.Generation {
				return true, nil
			}
		}
		return false, nil
	})
	// Scaling while paused still works; no new ReplicaSet appears.
	kubectl(t, "-n", ns, "scale", "deployment/web", "--replicas=3")
	harness.Eventually(t, "scaled while paused", func() (bool, error) {
		rss := deploymentRSs(t, ns)
		return len(rss) == 1 && *rss[0].Spec.Replicas == 3, nil
	})
	if rss := deploymentRSs(t, ns); rsFor(rss, "img:v2") != nil {
		t.Fatalf("paused deployment rolled out: %s", describe(rss))
	}
	kubectl(t, "-n", ns, "rollout", "resume", "deployment/web")
	kubectl(t, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
	rss := deploymentRSs(t, ns)
	if v2 := rsFor(rss, "img:v2"); v2 == nil || *v2.Spec.Replicas != 3 {
		t.Fatalf("after resume: %s", describe(rss))
	}
}

func TestDeploymentRecreate(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	fakeAgent(t, ns)
	d := newDeployment(ns, 2, "img:v1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if _, err := env.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitComplete(t, ns)
	// Watch pods: no v2 pod may exist while a v1 pod is active.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := env.client.CoreV1().Pods(ns).Watch(wctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	overlap := make(chan string, 1)
	newUp := make(chan struct{}) // the watcher saw both new pods live
	go func() {
		live := map[string]string{}
		signalled := false
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted || p.DeletionTimestamp != nil {
				delete(live, p.Name)
				continue
			}
			live[p.Name] = p.Spec.Containers[0].Image
			images := map[string]bool{}
			for _, img := range live {
				images[img] = true
			}
			if images["img:v1"] && images["img:v2"] {
				select {
				case overlap <- p.Name:
				default:
				}
			}
			v2 := 0
			for _, img := range live {
				if img == "img:v2" {
					v2++
				}
			}
			if v2 == 2 && !signalled {
				signalled = true
				close(newUp)
			}
		}
	}()
	kubectl(t, "-n", ns, "set", "image", "deployment/web", "c=img:v2")
	kubectl(t, "-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
	waitComplete(t, ns)
	harness.Eventually(t, "the pod watcher saw the new pods", func() (bool, error) {
		select {
		case <-newUp:
			return true, nil
		default:
			return false, nil
		}
	})
	select {
	case name := <-overlap:
		t.Fatalf("recreate ran old and new pods together (pod %s)", name)
	default:
	}
}

// TestDeploymentProgressDeadline: with no agent making pods ready, a
// rollout with progressDeadlineSeconds 2 is marked
// ProgressDeadlineExceeded, and `kubectl rollout status` reports it.
func TestDeploymentProgressDeadline(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	d := newDeployment(ns, 2, "img:v1")
	d.Spec.ProgressDeadlineSeconds = int32p(2)
	if _, err := env.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "ProgressDeadlineExceeded", func() (bool, error) {
		cur, err := env.client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
				return true, nil
			}
		}
		return false, nil
	})
	out, err := exec.Command(harness.RequireKubectl(t), "--kubeconfig", env.kubeconfig, "-n", ns, "rollout", "status", "deployment/web", "--timeout=30s").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "exceeded its progress deadline") {
		t.Fatalf("rollout status: err %v, output %s", err, out)
	}
}
