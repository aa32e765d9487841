package scheduler

import (
	"context"
	"strings"
	"testing"

	"berth/integration/harness"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var gpuTaint = corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}

func TestResourcesTaintsAndRetryOnNodeUpdate(t *testing.T) {
	c := startCluster(t)
	c.createNodes(t,
		node("small", "1", nil, nil),
		node("gpu", "4", nil, []corev1.Taint{gpuTaint}),
		node("big", "4", nil, nil),
	)
	c.createPod(t, pod("first", "2"))
	if got := c.waitBound(t, "first"); got != "big" {
		t.Fatalf("first bound to %s, want big (the only untainted node with 2 cpu free)", got)
	}
	var scheduled []string
	harness.Eventually(t, "Scheduled event for first", func() (bool, error) {
		scheduled = scheduled[:0]
		for _, e := range c.events(t, "first", "Scheduled") {
			scheduled = append(scheduled, e.Note)
		}
		return len(scheduled) == 1, nil
	})
	if want := "Successfully assigned default/first to big"; scheduled[0] != want {
		t.Errorf("Scheduled event %q, want %q", scheduled[0], want)
	}

	c.createPod(t, pod("second", "3"))
	c.waitFailedScheduling(t, "second", "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu. "+
		"preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.")

	// Removing the taint is a node update that may help: the pod is retried.
	n, err := c.client.CoreV1().Nodes().Get(context.Background(), "gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = nil
	if _, err := c.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := c.waitBound(t, "second"); got != "gpu" {
		t.Fatalf("second bound to %s after the taint was removed, want gpu", got)
	}

	m := c.metrics(t)
	for _, want := range []string{
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 2`,
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"}`,
		`scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 2`,
		`scheduler_pending_pods{queue="unschedulable"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestTolerationAndNodeSelector(t *testing.T) {
	c := startCluster(t)
	c.createNodes(t,
		node("a", "4", map[string]string{"zone": "a"}, nil),
		node("b", "4", map[string]string{"zone": "b"}, []corev1.Taint{gpuTaint}),
	)
	c.createPod(t, pod("tolerant", "", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"zone": "b"}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	}))
	if got := c.waitBound(t, "tolerant"); got != "b" {
		t.Errorf("tolerant bound to %s, want b", got)
	}
	c.createPod(t, pod("nowhere", "", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }))
	c.waitFailedScheduling(t, "nowhere", "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}. "+
		"preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
	c.createPod(t, pod("affine", "", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"b"}}}}},
		}}}
	}))
	if got := c.waitBound(t, "affine"); got != "a" {
		t.Errorf("affine bound to %s, want a", got)
	}
}

func TestOtherSchedulerNameLeftAlone(t *testing.T) {
	c := startCluster(t)
	c.createNodes(t, node("n", "4", nil, nil))
	c.createPod(t, pod("theirs", "", func(p *corev1.Pod) { p.Spec.SchedulerName = "someone-else" }))
	c.createPod(t, pod("ours", ""))
	if got := c.waitBound(t, "ours"); got != "n" {
		t.Fatalf("ours bound to %s, want n", got)
	}
	// "theirs" was created first and queued pods go first-come first-served:
	// had the scheduler taken it, it would be bound (or have events) by now.
	if got := c.boundTo(t, "theirs"); got != "" {
		t.Errorf("pod of another scheduler bound to %s", got)
	}
	if ev := c.events(t, "theirs", "FailedScheduling"); len(ev) != 0 {
		t.Errorf("pod of another scheduler has FailedScheduling events: %v", ev)
	}
}

func TestHostPortsAndPodCount(t *testing.T) {
	c := startCluster(t)
	c.createNodes(t, node("ports", "4", nil, nil), node("tiny", "4", nil, nil, "pods", "1"))
	withPort := func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "ports"}
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	}
	c.createPod(t, pod("web1", "", withPort))
	c.waitBound(t, "web1")
	c.createPod(t, pod("web2", "", withPort))
	c.waitFailedScheduling(t, "web2", "0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 1 node(s) didn't match Pod's node affinity/selector. "+
		"preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.")

	onTiny := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "tiny"} }
	c.createPod(t, pod("only", "", onTiny))
	c.waitBound(t, "only")
	c.createPod(t, pod("one-too-many", "", onTiny))
	c.waitFailedScheduling(t, "one-too-many", "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't match Pod's node affinity/selector. "+
		"preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.")

	// Deleting the pod on "tiny" frees the slot: the parked pod is retried.
	c.deletePod(t, "only")
	if got := c.waitBound(t, "one-too-many"); got != "tiny" {
		t.Errorf("one-too-many bound to %s after the slot freed, want tiny", got)
	}
}

func TestRequiredPodAntiAffinity(t *testing.T) {
	c := startCluster(t)
	c.createNodes(t,
		node("a1", "8", map[string]string{"zone": "a"}, nil),
		node("a2", "8", map[string]string{"zone": "a"}, nil),
		node("b1", "8", map[string]string{"zone": "b"}, nil),
	)
	anti := func(p *corev1.Pod) {
		p.Labels["app"] = "db"
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelHostname,
		}}}}
	}
	seen := map[string]bool{}
	for _, name := range []string{"db-0", "db-1", "db-2"} {
		c.createPod(t, pod(name, "", anti))
		n := c.waitBound(t, name)
		if seen[n] {
			t.Fatalf("%s bound to %s, which already runs a db pod", name, n)
		}
		seen[n] = true
	}
	c.createPod(t, pod("db-3", "", anti))
	c.waitFailedScheduling(t, "db-3", "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "+
		"preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")

}

func TestTopologySpreadDoNotSchedule(t *testing.T) {
	c := startCluster(t)
	closed := corev1.Taint{Key: "zone-a", Value: "closed", Effect: corev1.TaintEffectNoSchedule}
	c.createNodes(t,
		node("a1", "8", map[string]string{"zone": "a"}, []corev1.Taint{closed}),
		node("a2", "8", map[string]string{"zone": "a"}, []corev1.Taint{closed}),
		node("b1", "8", map[string]string{"zone": "b"}, nil),
	)
	spread := func(p *corev1.Pod) {
		p.Labels["app"] = "web"
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}}
	}
	tolerant := func(p *corev1.Pod) {
		spread(p)
		p.Spec.Tolerations = []corev1.Toleration{{Key: "zone-a", Operator: corev1.TolerationOpExists}}
	}
	zones := map[string]int{}
	zoneOf := map[string]string{"a1": "a", "a2": "a", "b1": "b"}
	for _, name := range []string{"web-0", "web-1", "web-2", "web-3"} {
		c.createPod(t, pod(name, "", tolerant))
		zones[zoneOf[c.waitBound(t, name)]]++
	}
	if zones["a"] != 2 || zones["b"] != 2 {
		t.Fatalf("web pods per zone %v, want 2 and 2 (maxSkew 1)", zones)
	}
	// Without the toleration only b1 fits; tainted zone a still counts as a
	// domain (nodeTaintsPolicy Ignore): b may reach 3 (skew 3-2 = 1) but
	// not 4 (skew 2).
	c.createPod(t, pod("web-4", "", spread))
	if got := c.waitBound(t, "web-4"); got != "b1" {
		t.Fatalf("web-4 bound to %s, want b1", got)
	}
	c.createPod(t, pod("web-5", "", spread))
	c.waitFailedScheduling(t, "web-5", "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, 2 node(s) had untolerated taint {zone-a: closed}. "+
		"preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.")
}

func TestPodAffinityFollowsExistingPod(t *testing.T) {
	c := startCluster(t)
	c.createNodes(t, node("a1", "8", map[string]string{"zone": "a"}, nil), node("b1", "8", map[string]string{"zone": "b"}, nil))
	c.createPod(t, pod("cache", "", func(p *corev1.Pod) {
		p.Labels["app"] = "cache"
		p.Spec.NodeSelector = map[string]string{"zone": "b"}
	}))
	c.waitBound(t, "cache")
	near := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}}, TopologyKey: "zone",
		}}}}
	}
	for _, name := range []string{"app-0", "app-1", "app-2"} {
		c.createPod(t, pod(name, "", near))
		if got := c.waitBound(t, name); got != "b1" {
			t.Errorf("%s bound to %s, want b1 (the zone of the cache pod)", name, got)
		}
	}
	c.createPod(t, pod("lonely", "", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "missing"}}, TopologyKey: "zone",
		}}}}
	}))
	c.waitFailedScheduling(t, "lonely", "0/2 nodes are available: 2 node(s) didn't match pod affinity rules. "+
		"preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
}
