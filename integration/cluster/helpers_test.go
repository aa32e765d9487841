package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// newNamespace creates a namespace for t, deleted at its end.
func newNamespace(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	name := "t-" + strings.ToLower(rand.String(6))
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// addNodes creates n Ready nodes named prefix-i and keeps their Leases in
// kube-node-lease renewed until t ends, as agents would.
func addNodes(t *testing.T, c kubernetes.Interface, prefix string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
		if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", name, err)
		}
		res := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		// The node IPAM controller writes the node too: retry conflicts.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Capacity, cur.Status.Allocatable = res, res
			now := metav1.Now()
			cur.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
			_, err = c.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("node %s status: %v", name, err)
		}
		names = append(names, name)
		t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	renewCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, name := range names {
				renewLease(renewCtx, c, name)
			}
			select {
			case <-renewCtx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	return names
}

// renewLease creates or renews a node's Lease (errors are retried on the
// next round).
func renewLease(ctx context.Context, c kubernetes.Interface, node string) {
	leases := c.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		secs := int32(40)
		_, _ = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: node},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: &secs, RenewTime: &now},
		}, metav1.CreateOptions{})
		return
	}
	if err != nil {
		return
	}
	l.Spec.RenewTime = &now
	_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
}

// fakeAgent marks the pods of ns bound to a node Running and Ready, and
// completes their graceful deletion, as an agent would, until t ends.
func fakeAgent(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for i := range pods.Items {
					p := &pods.Items[i]
					switch {
					case p.Spec.NodeName != "" && p.DeletionTimestamp != nil:
						// A bound pod's deletion waits for its agent.
						_ = c.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
					case p.Spec.NodeName != "" && !podReady(p):
						_ = makeReady(ctx, c, p)
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { stop(); <-done })
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// makeReady writes a Running, Ready status through pods/status.
func makeReady(ctx context.Context, c kubernetes.Interface, p *corev1.Pod) error {
	now := metav1.Now()
	p = p.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.PodIP, p.Status.HostIP = "10.244.0.10", "127.0.0.1"
	p.Status.Conditions = nil
	for _, typ := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	p.Status.ContainerStatuses = nil
	for _, ctr := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: ctr.Name, Image: ctr.Image, Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	_, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// podsOf lists the pods of ns not being deleted.
func podsOf(t *testing.T, c kubernetes.Interface, ns string) []corev1.Pod {
	t.Helper()
	l, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// deploymentYAML is a Deployment of replicas pods labelled app=name.
func deploymentYAML(ns, name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  replicas: %[3]d
  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1
        resources:
          requests: {cpu: 100m, memory: 64Mi}
`, ns, name, replicas)
}
