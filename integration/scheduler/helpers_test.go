package scheduler

import (
	"context"
	"fmt"
	"testing"

	"berth/integration/harness"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const ns = "default"

// node is a Node object (no agent) with cpu, memory "8Gi" and pods "110"
// allocatable unless overridden by extra (name, quantity pairs).
func node(name, cpu string, labels map[string]string, taints []corev1.Taint, extra ...string) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
	for k, v := range labels {
		n.Labels[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		n.Status.Allocatable[corev1.ResourceName(extra[i])] = resource.MustParse(extra[i+1])
	}
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	return n
}

func (c *cluster) createNodes(t testing.TB, nodes ...*corev1.Node) {
	t.Helper()
	for _, n := range nodes {
		if _, err := c.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", n.Name, err)
		}
	}
}

// pod is a pod with one container requesting cpu ("" for none).
func pod(name, cpu string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func (c *cluster) createPod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if _, err := c.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
}

// waitBound waits until the pod is bound and returns its node.
func (c *cluster) waitBound(t *testing.T, name string) string {
	t.Helper()
	var nodeName string
	harness.Eventually(t, "pod "+name+" bound", func() (bool, error) {
		p, err := c.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		nodeName = p.Spec.NodeName
		return nodeName != "", nil
	})
	return nodeName
}

// boundTo returns the pod's node ("" while unbound).
func (c *cluster) boundTo(t *testing.T, name string) string {
	t.Helper()
	p, err := c.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	return p.Spec.NodeName
}

// events lists the events.k8s.io events about a pod with the reason.
func (c *cluster) events(t *testing.T, podName, reason string) []eventsv1.Event {
	t.Helper()
	l, err := c.client.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []eventsv1.Event
	for _, e := range l.Items {
		if e.Regarding.Kind == "Pod" && e.Regarding.Name == podName && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// waitFailedScheduling waits for a FailedScheduling event about the pod
// with exactly msg, and for its PodScheduled=False condition with it.
func (c *cluster) waitFailedScheduling(t *testing.T, podName, msg string) {
	t.Helper()
	var seen []string
	harness.Eventually(t, fmt.Sprintf("FailedScheduling %q for %s (seen %q)", msg, podName, seen), func() (bool, error) {
		seen = seen[:0]
		for _, e := range c.events(t, podName, "FailedScheduling") {
			seen = append(seen, e.Note)
			if e.Note == msg && e.Type == corev1.EventTypeWarning && e.ReportingController == "default-scheduler" {
				return true, nil
			}
		}
		return false, fmt.Errorf("events seen: %q", seen)
	})
	harness.Eventually(t, "PodScheduled=False condition on "+podName, func() (bool, error) {
		p, err := c.client.CoreV1().Pods(ns).Get(context.Background(), podName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable && cond.Message == msg {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
}

func (c *cluster) deletePod(t *testing.T, name string) {
	t.Helper()
	zero := int64(0)
	if err := c.client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete pod %s: %v", name, err)
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
