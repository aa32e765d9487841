package multinode

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/integration/harness"
	"berth/integration/testbed"
)

// tolerationSeconds is how long the tolerant Deployment's pods stay on an
// unreachable or not-ready node.
const tolerationSeconds = 5

// A node lost — its agent SIGKILLed, or its network cut while the agent
// and pods run on — stops renewing its Lease: once the grace period has
// passed the node lifecycle controller marks it Unknown (NotReady) and
// taints it unreachable (NoSchedule, NoExecute); the pods tolerating that
// for 5 s are evicted then and their Deployment's replacements run on the
// other nodes, while the pods given upstream's default (300 s, by the
// DefaultTolerationSeconds admission) stay. Once the node is back it is
// Ready and untainted, the evicted pods are gone from the apiserver and
// from its containerd, the others run on. Each case logs the time from
// the fault to each stage.
func TestNodeLost(t *testing.T) {
	bed := testbed.Current(t)
	for _, f := range []struct {
		name          string
		node          int
		lose, restore func(*testbed.Node) error
	}{
		{"agent SIGKILLed", 0,
			func(n *testbed.Node) error { n.Agent.Kill(); return nil },
			func(n *testbed.Node) error { return bed.StartAgent(n) }},
		{"network cut", 1,
			func(n *testbed.Node) error { return n.SetConnected(false) },
			func(n *testbed.Node) error { return n.SetConnected(true) }},
	} {
		t.Run(f.name, func(t *testing.T) {
			nodeLost(t, bed, bed.Nodes[f.node], f.lose, f.restore)
		})
	}
}

func nodeLost(t *testing.T, bed *testbed.Bed, victim *testbed.Node, lose, restore func(*testbed.Node) error) {
	c := bed.Client
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns := namespace(t, c)

	// Every pod starts on the victim: the other nodes are cordoned meanwhile.
	for _, n := range bed.Nodes {
		if n != victim {
			cordon(t, c, n.Name, true)
		}
	}
	tolerant := deployment(bed, "tolerant", 4, []v1.Toleration{
		{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(tolerationSeconds))},
		{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(tolerationSeconds))},
	})
	defaulted := deployment(bed, "defaulted", 2, nil)
	for _, d := range []*appsv1.Deployment{tolerant, defaulted} {
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := waitPods(t, ctx, c, ns, "6 pods running on "+victim.Name, func(pods map[string]*v1.Pod) bool {
		return count(pods, func(p *v1.Pod) bool { return p.Spec.NodeName == victim.Name && readyPod(p) }) == 6
	})
	for _, p := range before {
		if p.Labels["app"] == "defaulted" && tolerationFor(p, v1.TaintNodeUnreachable) != 300 {
			t.Errorf("pod %s tolerates %s for %ds, want upstream's default 300 (DefaultTolerationSeconds admission)", p.Name, v1.TaintNodeUnreachable, tolerationFor(p, v1.TaintNodeUnreachable))
		}
	}
	for _, n := range bed.Nodes {
		if n != victim {
			cordon(t, c, n.Name, false)
		}
	}

	lost := time.Now()
	if err := lose(victim); err != nil {
		t.Fatal(err)
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			if err := restore(victim); err != nil {
				t.Errorf("restoring %s: %v", victim.Name, err)
			}
		}
	})

	var notReadyAt, taintedAt time.Time
	var taint *v1.Taint
	waitNode(t, ctx, c, victim.Name, "NotReady and tainted unreachable", func(n *v1.Node) bool {
		if notReadyAt.IsZero() && !testbed.IsReady(n) {
			notReadyAt = time.Now()
		}
		if taint == nil {
			if taint = findTaint(n, v1.TaintNodeUnreachable, v1.TaintEffectNoExecute); taint != nil {
				taintedAt = time.Now()
			}
		}
		return !notReadyAt.IsZero() && taint != nil
	})
	// The Lease's last renewal, before the loss: the grace period runs
	// from it.
	lease, err := c.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, victim.Name, metav1.GetOptions{})
	if err != nil || lease.Spec.RenewTime == nil {
		t.Fatalf("the Lease of %s: %v %v", victim.Name, lease, err)
	}
	renewed := lease.Spec.RenewTime.Time
	var firstEvicted, allEvicted time.Time
	after := waitPods(t, ctx, c, ns, "the tolerant pods evicted and replaced on other nodes", func(pods map[string]*v1.Pod) bool {
		evicted := count(pods, func(p *v1.Pod) bool { return p.Labels["app"] == "tolerant" && p.DeletionTimestamp != nil })
		if evicted > 0 && firstEvicted.IsZero() {
			firstEvicted = time.Now()
		}
		if evicted == 4 && allEvicted.IsZero() {
			allEvicted = time.Now()
		}
		replacements := count(pods, func(p *v1.Pod) bool {
			return p.Labels["app"] == "tolerant" && p.DeletionTimestamp == nil && p.Spec.NodeName != victim.Name && readyPod(p)
		})
		return !allEvicted.IsZero() && replacements == 4
	})
	replacedAt := time.Now()
	for _, p := range after {
		if p.Labels["app"] == "defaulted" && (p.DeletionTimestamp != nil || p.Spec.NodeName != victim.Name) {
			t.Errorf("pod %s (tolerating 300s) was evicted after %s", p.Name, time.Since(lost).Round(time.Second))
		}
	}

	t.Logf("%s lost at %s; the server's grace period is its default", victim.Name, lost.Format(time.RFC3339Nano))
	t.Logf("%-44s %10s", "stage", "after loss")
	for _, s := range []struct {
		name string
		at   time.Time
	}{
		{"last Lease renewal", renewed},
		{"node NotReady (Ready Unknown)", notReadyAt},
		{"tainted unreachable:NoExecute", taintedAt},
		{fmt.Sprintf("first pod evicted (tolerationSeconds %d)", tolerationSeconds), firstEvicted},
		{"all 4 evicted", allEvicted},
		{"4 replacements Running+Ready elsewhere", replacedAt},
	} {
		t.Logf("%-44s %10s", s.name, s.at.Sub(lost).Round(100*time.Millisecond))
	}
	// Evicted once their tolerationSeconds had passed since the taint (the
	// server's timestamps have a resolution of a second).
	if taint.TimeAdded == nil {
		t.Fatalf("the taint %+v has no timeAdded", taint)
	}
	due := taint.TimeAdded.Add(tolerationSeconds * time.Second)
	for _, p := range after {
		if p.Labels["app"] != "tolerant" || p.DeletionTimestamp == nil {
			continue
		}
		deleted := p.DeletionTimestamp.Add(-time.Duration(ptrValue(p.DeletionGracePeriodSeconds)) * time.Second)
		if deleted.Before(due.Add(-time.Second)) {
			t.Errorf("pod %s was evicted at %s, before its tolerationSeconds from the taint (%s) had passed (%s)", p.Name, deleted, taint.TimeAdded, due)
		}
	}

	// The node back: Ready, untainted; the evicted pods leave the apiserver
	// and the node's containerd, the defaulted ones run on.
	back := time.Now()
	if err := restore(victim); err != nil {
		t.Fatal(err)
	}
	restored = true
	waitNode(t, ctx, c, victim.Name, "Ready and untainted", func(n *v1.Node) bool {
		return testbed.IsReady(n) && findTaint(n, v1.TaintNodeUnreachable, "") == nil && findTaint(n, v1.TaintNodeNotReady, "") == nil
	})
	readyAgain := time.Since(back)
	final := waitPods(t, ctx, c, ns, "the evicted pods gone, the defaulted running on "+victim.Name, func(pods map[string]*v1.Pod) bool {
		return len(pods) == 6 && count(pods, func(p *v1.Pod) bool {
			return p.Labels["app"] == "defaulted" && p.Spec.NodeName == victim.Name && readyPod(p)
		}) == 2
	})
	t.Logf("%s back: Ready and untainted after %s, evicted pods gone after %s", victim.Name, readyAgain.Round(100*time.Millisecond), time.Since(back).Round(100*time.Millisecond))
	var evicted []string
	for _, p := range before {
		if _, ok := final[p.Name]; !ok {
			evicted = append(evicted, p.Name)
		}
	}
	if left := podsInRuntime(t, ctx, victim, ns, evicted); len(left) > 0 {
		t.Errorf("the evicted pods' containers are still in %s's containerd: %v", victim.Name, left)
	}
}

// deployment is a Deployment of busybox sleepers with tolerations.
func deployment(bed *testbed.Bed, name string, replicas int32, tolerations []v1.Toleration) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					TerminationGracePeriodSeconds: ptr(int64(1)), Tolerations: tolerations,
					Containers: []v1.Container{{Name: "main", Image: bed.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}}},
				},
			},
		},
	}
}

// cordon marks the node (un)schedulable; a cordon is undone after the test.
func cordon(t *testing.T, c kubernetes.Interface, name string, unschedulable bool) {
	t.Helper()
	set := func(v bool) error {
		n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = v
		_, err = c.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	}
	harness.WaitFor(t, 30*time.Second, fmt.Sprintf("node %s unschedulable=%t", name, unschedulable), func() (bool, string) {
		err := set(unschedulable) // retried on a conflict with the agent's writes
		return err == nil, fmt.Sprint(err)
	})
	if unschedulable {
		t.Cleanup(func() { _ = set(false) })
	}
}

// waitNode watches the node until cond holds.
func waitNode(t *testing.T, ctx context.Context, c kubernetes.Interface, name, what string, cond func(*v1.Node) bool) {
	t.Helper()
	lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "nodes", "", fields.OneTermEqualSelector("metadata.name", name))
	var last *v1.Node
	_, err := watchtools.UntilWithSync(ctx, lw, &v1.Node{}, nil, func(e watch.Event) (bool, error) {
		n, ok := e.Object.(*v1.Node)
		if !ok {
			return false, nil
		}
		last = n
		return cond(n), nil
	})
	if err != nil {
		desc := "never seen"
		if last != nil {
			desc = fmt.Sprintf("ready %t, taints %v", testbed.IsReady(last), last.Spec.Taints)
		}
		t.Fatalf("node %s not %s: %v; last: %s", name, what, err, desc)
	}
}

// waitPods watches the namespace's pods until cond holds for them (by
// name), and returns them.
func waitPods(t *testing.T, ctx context.Context, c kubernetes.Interface, ns, what string, cond func(map[string]*v1.Pod) bool) map[string]*v1.Pod {
	t.Helper()
	pods := map[string]*v1.Pod{}
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Pods(ns).List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Pods(ns).Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &v1.Pod{}, nil, func(e watch.Event) (bool, error) {
		p, ok := e.Object.(*v1.Pod)
		if !ok {
			return false, nil
		}
		if e.Type == watch.Deleted {
			delete(pods, p.Name)
		} else {
			pods[p.Name] = p
		}
		return cond(pods), nil
	})
	if err != nil {
		var desc []string
		for _, p := range pods {
			desc = append(desc, fmt.Sprintf("%s on %s %s ready %t deleting %t", p.Name, p.Spec.NodeName, p.Status.Phase, readyPod(p), p.DeletionTimestamp != nil))
		}
		slices.Sort(desc)
		t.Fatalf("not %s: %v; pods: %v", what, err, desc)
	}
	return pods
}

// podsInRuntime lists the sandboxes of the named pods of ns in the node's
// containerd.
func podsInRuntime(t *testing.T, ctx context.Context, n *testbed.Node, ns string, names []string) []string {
	t.Helper()
	rt, err := cri.New(ctx, cri.Config{Endpoint: n.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.namespace": ns}})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, s := range sandboxes {
		if slices.Contains(names, s.GetMetadata().GetName()) {
			left = append(left, fmt.Sprintf("%s (%s)", s.GetMetadata().GetName(), s.GetState()))
		}
	}
	return left
}

func count(pods map[string]*v1.Pod, pred func(*v1.Pod) bool) int {
	n := 0
	for _, p := range pods {
		if pred(p) {
			n++
		}
	}
	return n
}

// readyPod reports the pod Running with its Ready condition True.
func readyPod(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// tolerationFor is the pod's tolerationSeconds of key's NoExecute taint
// (-1: none, or forever).
func tolerationFor(p *v1.Pod, key string) int64 {
	for _, tol := range p.Spec.Tolerations {
		if tol.Key == key && tol.Effect == v1.TaintEffectNoExecute && tol.TolerationSeconds != nil {
			return *tol.TolerationSeconds
		}
	}
	return -1
}

// findTaint is the node's taint of key (and effect, unless ""), nil if none.
func findTaint(n *v1.Node, key string, effect v1.TaintEffect) *v1.Taint {
	for i, tt := range n.Spec.Taints {
		if tt.Key == key && (effect == "" || tt.Effect == effect) {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
