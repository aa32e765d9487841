package controllers

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"berth/integration/harness"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
)

// namespace creates a fresh namespace for t, deleted at cleanup.
func namespace(t *testing.T) string {
	t.Helper()
	name := "t-" + strings.ToLower(rand.String(6))
	_, err := env.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = env.client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

func podTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func listPods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	l, err := env.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	return l.Items
}

func activePods(t *testing.T, ns string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range listPods(t, ns) {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// makeReady plays the agent: the pod is Running and Ready now.
func makeReady(ctx context.Context, p *corev1.Pod) error {
	p = p.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true, Image: p.Spec.Containers[0].Image, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	_, err := env.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// fakeAgent makes every pod of ns ready as soon as it appears, until the
// test ends.
func fakeAgent(t *testing.T, ns string) {
	t.Helper()
	onPodEvents(t, ns, func(ctx context.Context, ev watch.Event, p *corev1.Pod) {
		if (ev.Type != watch.Added && ev.Type != watch.Modified) || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodRunning {
			return
		}
		if err := makeReady(ctx, p); err != nil && ctx.Err() == nil {
			t.Errorf("fake agent: %v", err)
		}
	})
}

// onPodEvents calls handle with each event of a watch on ns's pods, from a
// goroutine, until the test ends; ctx ends with the test.
func onPodEvents(t *testing.T, ns string, handle func(ctx context.Context, ev watch.Event, p *corev1.Pod)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := env.client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatalf("watch pods: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				handle(ctx, ev, p)
			}
		}
	}()
}

func getRS(t *testing.T, ns, name string) *appsv1.ReplicaSet {
	t.Helper()
	rs, err := env.client.AppsV1().ReplicaSets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get replicaset %s: %v", name, err)
	}
	return rs
}

// kubectl runs kubectl (harness.RequireKubectl: outside CI a missing one
// skips) against the server.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(harness.RequireKubectl(t), append([]string{"--kubeconfig", env.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func int32p(n int32) *int32 { return &n }

func describe(rss []appsv1.ReplicaSet) string {
	var b strings.Builder
	for _, rs := range rss {
		fmt.Fprintf(&b, "%s(spec=%d,status=%d,avail=%d,rev=%s) ", rs.Name, *rs.Spec.Replicas, rs.Status.Replicas, rs.Status.AvailableReplicas, rs.Annotations["deployment.kubernetes.io/revision"])
	}
	return b.String()
}
