package daemonset

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/internal/api/defaults"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func mkDS(mutate ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds-uid", Generation: 1,
			Annotations: map[string]string{TemplateGenerationAnnotation: "2"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}}},
		},
	}
	defaults.DaemonSet(ds)
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

type nodeOpt func(*corev1.Node)

func mkNode(name string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func tainted(key string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

func labelled(k, v string) nodeOpt { return func(n *corev1.Node) { n.Labels[k] = v } }

type podOpt func(*corev1.Pod)

func mkPod(name, node string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		Labels: map[string]string{"app": "agent", HashLabel: "new"}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func old(p *corev1.Pod) { p.Labels[HashLabel] = "old" }

func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func createdAgo(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
}

func byNode(pods ...*corev1.Pod) map[string][]*corev1.Pod {
	m := map[string][]*corev1.Pod{}
	for _, p := range pods {
		m[TargetNode(p)] = append(m[TargetNode(p)], p)
	}
	return m
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func surge(n int32) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) {
		s, z := intstr.FromInt32(n), intstr.FromInt32(0)
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: &s, MaxUnavailable: &z}
	}
}

func maxUnavailable(n int32) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) {
		u := intstr.FromInt32(n)
		ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &u
	}
}

func onDelete(ds *appsv1.DaemonSet) {
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
}

func TestShouldRun(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		ds                    *appsv1.DaemonSet
		node                  *corev1.Node
		wantRun, wantContinue bool
	}{
		{"plain node", mkDS(), mkNode("a"), true, true},
		{"node selector matches", mkDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"} }),
			mkNode("a", labelled("role", "edge")), true, true},
		{"node selector does not match", mkDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"} }),
			mkNode("a"), false, false},
		{"required affinity does not match", mkDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}}}}}
		}), mkNode("a", labelled("zone", "z2")), false, false},
		{"nodeName elsewhere", mkDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "b" }), mkNode("a"), false, false},
		{"NoSchedule taint: not placed, may stay", mkDS(), mkNode("a", tainted("dedicated", corev1.TaintEffectNoSchedule)), false, true},
		{"NoExecute taint: neither", mkDS(), mkNode("a", tainted("dedicated", corev1.TaintEffectNoExecute)), false, false},
		{"tolerated taint", mkDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}), mkNode("a", tainted("dedicated", corev1.TaintEffectNoSchedule)), true, true},
		{"not-ready node tolerated", mkDS(), mkNode("a", tainted(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)), true, true},
		{"unreachable node tolerated", mkDS(), mkNode("a", tainted(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)), true, true},
		{"pressure and cordon tolerated", mkDS(), mkNode("a", tainted(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
			tainted(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule), tainted(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
			tainted(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)), true, true},
		{"network unavailable: pod network needed", mkDS(), mkNode("a", tainted(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), false, true},
		{"network unavailable: hostNetwork tolerates", mkDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true }),
			mkNode("a", tainted(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, cont := ShouldRun(tc.node, tc.ds)
			if run != tc.wantRun || cont != tc.wantContinue {
				t.Fatalf("ShouldRun = %v, %v; want %v, %v", run, cont, tc.wantRun, tc.wantContinue)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	backoffB := func(n string) bool { return n == "b" }
	for _, tc := range []struct {
		name       string
		ds         *appsv1.DaemonSet
		nodes      []*corev1.Node
		pods       []*corev1.Pod
		inBackoff  func(string) bool
		wantCreate []string
		wantDelete []string
	}{
		{name: "a pod per eligible node", ds: mkDS(), nodes: []*corev1.Node{mkNode("a"), mkNode("b"), mkNode("c", tainted("x", corev1.TaintEffectNoSchedule))},
			pods: []*corev1.Pod{mkPod("on-a", "a", ready)}, wantCreate: []string{"b"}, wantDelete: []string{}},
		{name: "extra pods: the oldest kept", ds: mkDS(), nodes: []*corev1.Node{mkNode("a")},
			pods: []*corev1.Pod{mkPod("young", "a", createdAgo(time.Minute)), mkPod("old", "a", createdAgo(time.Hour))}, wantDelete: []string{"young"}},
		{name: "failed pod deleted, succeeded too", ds: mkDS(), nodes: []*corev1.Node{mkNode("a"), mkNode("b")},
			pods: []*corev1.Pod{mkPod("fail", "a", phase(corev1.PodFailed)), mkPod("done", "b", phase(corev1.PodSucceeded))}, wantDelete: []string{"done", "fail"}},
		{name: "failed pod kept during back-off", ds: mkDS(), nodes: []*corev1.Node{mkNode("b")}, inBackoff: backoffB,
			pods: []*corev1.Pod{mkPod("fail", "b", phase(corev1.PodFailed))}, wantDelete: []string{}},
		{name: "NoExecute taint evicts", ds: mkDS(), nodes: []*corev1.Node{mkNode("a", tainted("x", corev1.TaintEffectNoExecute))},
			pods: []*corev1.Pod{mkPod("p", "a", ready)}, wantDelete: []string{"p"}},
		{name: "NoSchedule taint keeps a running pod", ds: mkDS(), nodes: []*corev1.Node{mkNode("a", tainted("x", corev1.TaintEffectNoSchedule))},
			pods: []*corev1.Pod{mkPod("p", "a", ready)}, wantDelete: []string{}},
		{name: "pod of a deleted node", ds: mkDS(), nodes: []*corev1.Node{mkNode("a")},
			pods: []*corev1.Pod{mkPod("p", "a", ready), mkPod("gone", "z", ready)}, wantDelete: []string{"gone"}},
		{name: "unbound pod counts for its pinned node", ds: mkDS(), nodes: []*corev1.Node{mkNode("a")},
			pods: []*corev1.Pod{func() *corev1.Pod { p := NewPod(mkDS(), "a", "new"); p.Name = "pending"; return p }()}, wantDelete: []string{}},
		{name: "rolling update: one available old pod at a time", ds: mkDS(), nodes: []*corev1.Node{mkNode("a"), mkNode("b"), mkNode("c")},
			pods:       []*corev1.Pod{mkPod("a1", "a", old, ready), mkPod("b1", "b", old, ready), mkPod("c1", "c", old, ready)},
			wantDelete: []string{"a1"}},
		{name: "rolling update: unavailable old pods go at once, budget used up", ds: mkDS(), nodes: []*corev1.Node{mkNode("a"), mkNode("b"), mkNode("c")},
			pods:       []*corev1.Pod{mkPod("a1", "a", old), mkPod("b1", "b", old), mkPod("c1", "c", old, ready)},
			wantDelete: []string{"a1", "b1"}},
		{name: "rolling update: a new pod not yet available holds the next", ds: mkDS(), nodes: []*corev1.Node{mkNode("a"), mkNode("b")},
			pods: []*corev1.Pod{mkPod("a2", "a"), mkPod("b1", "b", old, ready)}, wantDelete: []string{}},
		{name: "rolling update: maxUnavailable 2", ds: mkDS(maxUnavailable(2)), nodes: []*corev1.Node{mkNode("a"), mkNode("b"), mkNode("c")},
			pods:       []*corev1.Pod{mkPod("a1", "a", old, ready), mkPod("b1", "b", old, ready), mkPod("c1", "c", old, ready)},
			wantDelete: []string{"a1", "b1"}},
		{name: "surge: new pod beside the old one", ds: mkDS(surge(1)), nodes: []*corev1.Node{mkNode("a"), mkNode("b")},
			pods:       []*corev1.Pod{mkPod("a1", "a", old, ready), mkPod("b1", "b", old, ready)},
			wantCreate: []string{"a"}, wantDelete: []string{}},
		{name: "rolling update: a node whose old pod is gone gets its new one, no other old pod goes in that sync", ds: mkDS(),
			nodes:      []*corev1.Node{mkNode("a"), mkNode("b"), mkNode("c")},
			pods:       []*corev1.Pod{mkPod("b1", "b", old, ready), mkPod("c1", "c", old, ready)},
			wantCreate: []string{"a"}, wantDelete: []string{}},
		{name: "surge: old pod goes once the new one is available (the next surge in the next sync)", ds: mkDS(surge(1)), nodes: []*corev1.Node{mkNode("a"), mkNode("b")},
			pods:       []*corev1.Pod{mkPod("a1", "a", old, ready, createdAgo(2*time.Hour)), mkPod("a2", "a", ready), mkPod("b1", "b", old, ready)},
			wantCreate: []string{}, wantDelete: []string{"a1"}},
		{name: "surge: with the old pod gone, the next node surges", ds: mkDS(surge(1)), nodes: []*corev1.Node{mkNode("a"), mkNode("b")},
			pods:       []*corev1.Pod{mkPod("a2", "a", ready), mkPod("b1", "b", old, ready)},
			wantCreate: []string{"b"}, wantDelete: []string{}},
		{name: "surge: a new pod not yet available uses the budget", ds: mkDS(surge(1)), nodes: []*corev1.Node{mkNode("a"), mkNode("b")},
			pods:       []*corev1.Pod{mkPod("a1", "a", old, ready, createdAgo(2*time.Hour)), mkPod("a2", "a"), mkPod("b1", "b", old, ready)},
			wantCreate: []string{}, wantDelete: []string{}},
		{name: "OnDelete: old pods stay", ds: mkDS(onDelete), nodes: []*corev1.Node{mkNode("a")},
			pods: []*corev1.Pod{mkPod("a1", "a", old, ready)}, wantDelete: []string{}},
		{name: "being deleted: nothing", ds: mkDS(func(ds *appsv1.DaemonSet) { ts := metav1.NewTime(now); ds.DeletionTimestamp = &ts }),
			nodes: []*corev1.Node{mkNode("a")}, wantCreate: []string{}, wantDelete: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(State{DS: tc.ds, Nodes: tc.nodes, PodsByNode: byNode(tc.pods...), Hash: "new", InBackoff: tc.inBackoff, Now: now})
			create := append([]string{}, p.CreateOn...)
			slices.Sort(create)
			if tc.wantCreate == nil {
				tc.wantCreate = []string{}
			}
			if !slices.Equal(create, tc.wantCreate) {
				t.Errorf("create on %v, want %v", create, tc.wantCreate)
			}
			if got := names(p.Delete); tc.wantDelete != nil && !slices.Equal(got, tc.wantDelete) {
				t.Errorf("delete %v, want %v", got, tc.wantDelete)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	ds := mkDS(func(ds *appsv1.DaemonSet) { ds.Generation = 3 })
	nodes := []*corev1.Node{mkNode("a"), mkNode("b"), mkNode("c"), mkNode("d", tainted("x", corev1.TaintEffectNoSchedule))}
	pods := []*corev1.Pod{mkPod("a1", "a", ready), mkPod("b1", "b", old), mkPod("d1", "d", ready)}
	st := Status(State{DS: ds, Nodes: nodes, PodsByNode: byNode(pods...), Hash: "new", Now: now})
	want := appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 3, CurrentNumberScheduled: 2, NumberMisscheduled: 1,
		NumberReady: 1, NumberAvailable: 1, UpdatedNumberScheduled: 1, NumberUnavailable: 2}
	if st.ObservedGeneration != want.ObservedGeneration || st.DesiredNumberScheduled != want.DesiredNumberScheduled || st.CurrentNumberScheduled != want.CurrentNumberScheduled ||
		st.NumberMisscheduled != want.NumberMisscheduled || st.NumberReady != want.NumberReady || st.NumberAvailable != want.NumberAvailable ||
		st.UpdatedNumberScheduled != want.UpdatedNumberScheduled || st.NumberUnavailable != want.NumberUnavailable {
		t.Fatalf("status %+v, want %+v", st, want)
	}
}

func TestNewPodPinnedAndTolerant(t *testing.T) {
	ds := mkDS(func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.HostNetwork = true
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}},
		}}
	})
	p := NewPod(ds, "node-1", "h1")
	if p.GenerateName != "agent-" || p.Labels[HashLabel] != "h1" || p.Labels[TemplateGenerationLabel] != "2" || p.Labels["app"] != "agent" {
		t.Fatalf("meta %+v", p.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "DaemonSet" || ref.UID != "ds-uid" {
		t.Fatalf("controller %+v", ref)
	}
	terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 || terms[0].MatchFields[0].Key != "metadata.name" || terms[0].MatchFields[0].Values[0] != "node-1" {
		t.Fatalf("required terms %+v", terms)
	}
	if len(p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Error("preferred terms dropped")
	}
	if TargetNode(p) != "node-1" {
		t.Errorf("TargetNode = %q", TargetNode(p))
	}
	keys := map[string]corev1.TaintEffect{}
	for _, tol := range p.Spec.Tolerations {
		keys[tol.Key] = tol.Effect
	}
	for k, e := range map[string]corev1.TaintEffect{
		corev1.TaintNodeNotReady: corev1.TaintEffectNoExecute, corev1.TaintNodeUnreachable: corev1.TaintEffectNoExecute,
		corev1.TaintNodeDiskPressure: corev1.TaintEffectNoSchedule, corev1.TaintNodeMemoryPressure: corev1.TaintEffectNoSchedule,
		corev1.TaintNodePIDPressure: corev1.TaintEffectNoSchedule, corev1.TaintNodeUnschedulable: corev1.TaintEffectNoSchedule,
		corev1.TaintNodeNetworkUnavailable: corev1.TaintEffectNoSchedule,
	} {
		if keys[k] != e {
			t.Errorf("toleration %s: effect %q, want %q", k, keys[k], e)
		}
	}
	if ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields != nil {
		t.Error("the template was modified")
	}
}

func TestHistory(t *testing.T) {
	ds := mkDS()
	patch, err := Patch(ds)
	if err != nil {
		t.Fatal(err)
	}
	rev := func(name string, n int64, data []byte, hash string) *appsv1.ControllerRevision {
		r := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{HashLabel: hash}}, Revision: n}
		r.Data.Raw = data
		return r
	}
	other := []byte(`{"spec":{"template":{"$patch":"replace"}}}`)
	h, err := SortHistory(ds, []*appsv1.ControllerRevision{rev("r1", 1, other, "h1"), rev("r2", 2, patch, "h2"), rev("r3", 3, other, "h3"), rev("r4", 4, patch, "h4")})
	if err != nil {
		t.Fatal(err)
	}
	if h.Current.Name != "r4" || len(h.Duplicates) != 1 || h.Duplicates[0].Name != "r2" || len(h.Old) != 2 || h.Next != 4 {
		t.Fatalf("history: current %s dups %d old %d next %d", h.Current.Name, len(h.Duplicates), len(h.Old), h.Next)
	}
	r, err := NewRevision(ds, "abc", 5)
	if err != nil || r.Name != "agent-abc" || r.Labels[HashLabel] != "abc" || r.Labels["app"] != "agent" || string(r.Data.Raw) != string(patch) {
		t.Fatalf("revision %+v (%v)", r, err)
	}
	if !strings.HasPrefix(string(patch), `{"spec":{"template":{"$patch":"replace",`) {
		t.Errorf("patch %s", patch)
	}
	limit := int32(1)
	ds.Spec.RevisionHistoryLimit = &limit
	olds := []*appsv1.ControllerRevision{rev("r1", 1, other, "h1"), rev("r2", 2, other, "h2"), rev("r3", 3, other, "h3")}
	pruned := ToPrune(ds, olds, []*corev1.Pod{mkPod("p", "a", func(p *corev1.Pod) { p.Labels[HashLabel] = "h1" })})
	if len(pruned) != 2 || pruned[0].Name != "r2" || pruned[1].Name != "r3" {
		t.Fatalf("pruned %v", pruned)
	}
}
