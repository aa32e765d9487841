package controllers

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"berth/integration/harness"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// createNode registers a Node (as an agent would: then its status) and
// deletes it at cleanup.
func createNode(t *testing.T, name string, ready bool) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n, err := env.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if ready {
		n = setNodeReady(t, name)
	}
	return n
}

func setNodeReady(t *testing.T, name string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	var out *corev1.Node
	harness.Eventually(t, "node status written", func() (bool, error) {
		n, err := env.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
		out, err = env.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err == nil, err
	})
	return out
}

func TestNodeIPAM(t *testing.T) {
	ctx := context.Background()
	// 10.99.0.0/24 in /26s: four subnets.
	cidrs := map[string]string{}
	for i := range 4 {
		name := fmt.Sprintf("ipam-%d", i)
		createNode(t, name, false)
		harness.Eventually(t, "pod CIDR of "+name, func() (bool, error) {
			n, err := env.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || n.Spec.PodCIDR == "" {
				return false, err
			}
			if len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR {
				t.Fatalf("podCIDRs %v disagree with podCIDR %s", n.Spec.PodCIDRs, n.Spec.PodCIDR)
			}
			cidrs[name] = n.Spec.PodCIDR
			return true, nil
		})
	}
	_, cluster, _ := net.ParseCIDR(testClusterCIDR)
	seen := map[string]string{}
	for node, c := range cidrs {
		ip, sub, err := net.ParseCIDR(c)
		if err != nil || !cluster.Contains(ip) || sub.Mask.String() != net.CIDRMask(testNodeMask, 32).String() {
			t.Fatalf("node %s got %s: want a /%d in %s", node, c, testNodeMask, testClusterCIDR)
		}
		if other, dup := seen[c]; dup {
			t.Fatalf("nodes %s and %s share %s", node, other, c)
		}
		seen[c] = node
	}
	// The range is full: a fifth node gets none (and an event says so).
	createNode(t, "ipam-4", false)
	harness.Eventually(t, "CIDRNotAvailable event for ipam-4", func() (bool, error) {
		evs, err := env.client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "ipam-4").String()})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "CIDRNotAvailable" {
				return true, nil
			}
		}
		return false, nil
	})
	if n, _ := env.client.CoreV1().Nodes().Get(ctx, "ipam-4", metav1.GetOptions{}); n.Spec.PodCIDR != "" {
		t.Fatalf("ipam-4 got %s from a full range", n.Spec.PodCIDR)
	}
	// Deleting a node frees its subnet for the waiting one.
	if err := env.client.CoreV1().Nodes().Delete(ctx, "ipam-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "ipam-4 gets ipam-2's subnet", func() (bool, error) {
		n, err := env.client.CoreV1().Nodes().Get(ctx, "ipam-4", metav1.GetOptions{})
		return err == nil && n.Spec.PodCIDR == cidrs["ipam-2"], err
	})
	for i := range 5 {
		_ = env.client.CoreV1().Nodes().Delete(ctx, fmt.Sprintf("ipam-%d", i), metav1.DeleteOptions{})
	}
	harness.Eventually(t, "ipam nodes gone", func() (bool, error) {
		l, err := env.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, err
	})
}

// heartbeat renews node's Lease every 200ms until stopped.
type heartbeat struct {
	stop chan struct{}
	done chan struct{}
	// last is when the last renewal was sent (read after Stop).
	last time.Time
}

func startHeartbeat(t *testing.T, node string) *heartbeat {
	t.Helper()
	ctx := context.Background()
	leases := env.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	dur := int32(40)
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: &dur, RenewTime: &now}}
	if _, err := leases.Create(ctx, l, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leases.Delete(context.Background(), node, metav1.DeleteOptions{}) })
	h := &heartbeat{stop: make(chan struct{}), done: make(chan struct{}), last: now.Time}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-tick.C:
				cur, err := leases.Get(ctx, node, metav1.GetOptions{})
				if err != nil {
					continue
				}
				sent := time.Now()
				now := metav1.NewMicroTime(sent)
				cur.Spec.RenewTime = &now
				if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err == nil {
					h.last = sent
				}
			}
		}
	}()
	return h
}

func (h *heartbeat) Stop() {
	close(h.stop)
	<-h.done
}

func bind(t *testing.T, p *corev1.Pod, node string) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := env.client.CoreV1().Pods(p.Namespace).Bind(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind %s to %s: %v", p.Name, node, err)
	}
}

func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// TestNodeFailureEvictsAndReplaces: a node that stops renewing its Lease
// becomes Ready=Unknown and tainted unreachable; pods tolerating that for
// 2s are deleted after 2s and their ReplicaSet replaces them; a pod
// tolerating it forever stays; a node that reports Ready again is untainted.
func TestNodeFailureEvictsAndReplaces(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createNode(t, "life-1", true)
	hb := startHeartbeat(t, "life-1")

	two := int64(2)
	tmpl := podTemplate("img:v1")
	tmpl.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &two}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "life", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{Replicas: int32p(2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: tmpl}}
	if _, err := env.client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, "2 pods", func() (bool, error) { return len(activePods(t, ns)) == 2, nil })
	first := map[string]bool{}
	for _, p := range activePods(t, ns) {
		bind(t, &p, "life-1")
		first[p.Name] = true
	}
	forever := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "forever", Namespace: ns}, Spec: podTemplate("img:v1").Spec}
	forever.Spec.NodeName = "life-1"
	forever.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	if _, err := env.client.CoreV1().Pods(ns).Create(ctx, forever, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range listPods(t, ns) {
		if err := makeReady(ctx, &p); err != nil {
			t.Fatal(err)
		}
	}
	hb.Stop()
	harness.Eventually(t, "node Ready=Unknown with unreachable taints", func() (bool, error) {
		n, err := env.client.CoreV1().Nodes().Get(ctx, "life-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionUnknown && c.Reason == "NodeStatusUnknown" {
				return hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) && hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule), nil
			}
		}
		return false, nil
	})
	// The controller saw the last renewal no earlier than it was sent, and
	// waits the grace period from then.
	if since := time.Since(hb.last); since < testGracePeriod {
		t.Fatalf("node marked unknown %v after its last renewal, before the %v grace period", since, testGracePeriod)
	}
	harness.Eventually(t, "tolerating pods evicted and replaced", func() (bool, error) {
		active := activePods(t, ns)
		replaced := 0
		for _, p := range active {
			if first[p.Name] {
				return false, nil
			}
			if p.Name != "forever" {
				replaced++
			}
		}
		return replaced == 2, nil
	})
	f, err := env.client.CoreV1().Pods(ns).Get(ctx, "forever", metav1.GetOptions{})
	if err != nil || f.DeletionTimestamp != nil {
		t.Fatalf("pod tolerating forever was evicted: %v %v", err, f.DeletionTimestamp)
	}
	for _, c := range f.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionFalse {
			t.Fatalf("pod on an unreachable node still Ready: %+v", c)
		}
	}
	// The node comes back.
	hb = startHeartbeat(t, "life-1")
	defer hb.Stop()
	setNodeReady(t, "life-1")
	harness.Eventually(t, "taints removed", func() (bool, error) {
		n, err := env.client.CoreV1().Nodes().Get(ctx, "life-1", metav1.GetOptions{})
		return err == nil && !hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) && !hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule), err
	})
}
