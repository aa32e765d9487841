package nodelifecycle

import (
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func readyNode(status corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(heartbeat)},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
		}},
	}
}

func lease(renew time.Time) *coordinationv1.Lease {
	mt := metav1.NewMicroTime(renew)
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &mt}}
}

func TestObserveAndUnknown(t *testing.T) {
	grace, startup := 40*time.Second, 60*time.Second
	node := readyNode(corev1.ConditionTrue, t0.Add(-time.Hour))
	// First sight: the probe starts now.
	h := Observe(nil, node, lease(t0.Add(-time.Minute)), t0)
	if !h.ProbeTime.Equal(t0) {
		t.Fatalf("first probe = %v", h.ProbeTime)
	}
	// The lease is renewed at t0+30s: probe moves to the controller's now.
	h = Observe(&h, node, lease(t0.Add(30*time.Second)), t0.Add(31*time.Second))
	if !h.ProbeTime.Equal(t0.Add(31 * time.Second)) {
		t.Fatalf("probe after renew = %v", h.ProbeTime)
	}
	// Same lease seen again later: no sign of life.
	h2 := Observe(&h, node, lease(t0.Add(30*time.Second)), t0.Add(60*time.Second))
	if !h2.ProbeTime.Equal(h.ProbeTime) {
		t.Fatalf("unchanged lease moved the probe to %v", h2.ProbeTime)
	}
	if _, changed := UnknownConditions(node, h2, t0.Add(71*time.Second), grace, startup); changed {
		t.Fatal("exactly at the grace period: still fine")
	}
	conds, changed := UnknownConditions(node, h2, t0.Add(72*time.Second), grace, startup)
	if !changed {
		t.Fatal("past the grace period: want Unknown")
	}
	byType := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range conds {
		byType[c.Type] = c
	}
	if r := byType[corev1.NodeReady]; r.Status != corev1.ConditionUnknown || r.Reason != "NodeStatusUnknown" || !r.LastTransitionTime.Time.Equal(t0.Add(72*time.Second)) {
		t.Fatalf("ready = %+v", r)
	}
	if d := byType[corev1.NodeDiskPressure]; d.Status != corev1.ConditionUnknown || d.Reason != "NodeStatusNeverUpdated" {
		t.Fatalf("disk pressure = %+v", d)
	}
	if byType[corev1.NodeMemoryPressure].Status != corev1.ConditionUnknown {
		t.Fatal("memory pressure not Unknown")
	}
	node.Status.Conditions = conds
	if _, changed := UnknownConditions(node, h2, t0.Add(80*time.Second), grace, startup); changed {
		t.Fatal("already Unknown: no change")
	}
	// A node that never posted Ready gets the startup grace from its creation.
	fresh := &corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}}
	hf := Observe(nil, fresh, nil, t0.Add(time.Second))
	if _, changed := UnknownConditions(fresh, hf, t0.Add(50*time.Second), grace, startup); changed {
		t.Fatal("within startup grace")
	}
	if _, changed := UnknownConditions(fresh, hf, t0.Add(61*time.Second), grace, startup); !changed {
		t.Fatal("past startup grace")
	}
}

func TestDesiredTaints(t *testing.T) {
	other := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	old := metav1.NewTime(t0.Add(-time.Minute))
	for _, tc := range []struct {
		name    string
		ready   corev1.ConditionStatus
		taints  []corev1.Taint
		want    []string
		changed bool
	}{
		{"unknown adds unreachable", corev1.ConditionUnknown, []corev1.Taint{other}, []string{"dedicated:NoSchedule", "node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"}, true},
		{"false adds not-ready and drops unreachable", corev1.ConditionFalse, []corev1.Taint{{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &old}}, []string{"node.kubernetes.io/not-ready:NoSchedule", "node.kubernetes.io/not-ready:NoExecute"}, true},
		{"true removes both", corev1.ConditionTrue, []corev1.Taint{other, {Key: TaintNotReady, Effect: corev1.TaintEffectNoSchedule}}, []string{"dedicated:NoSchedule"}, true},
		{"unknown already tainted", corev1.ConditionUnknown, []corev1.Taint{{Key: TaintUnreachable, Effect: corev1.TaintEffectNoSchedule}, {Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &old}}, []string{"node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"}, false},
		{"memory pressure adds its NoSchedule taint", corev1.ConditionTrue, []corev1.Taint{other}, []string{"dedicated:NoSchedule", "node.kubernetes.io/memory-pressure:NoSchedule"}, true},
		{"pressure gone removes it", corev1.ConditionTrue, []corev1.Taint{{Key: corev1.TaintNodeDiskPressure, Effect: corev1.TaintEffectNoSchedule}, other}, []string{"dedicated:NoSchedule"}, true},
		{"still under memory pressure", corev1.ConditionTrue, []corev1.Taint{{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}}, []string{"node.kubernetes.io/memory-pressure:NoSchedule"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := readyNode(tc.ready, t0)
			n.Spec.Taints = tc.taints
			if strings.Contains(tc.name, "memory pressure") {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue},
					corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse})
			}
			got, changed := DesiredTaints(n, t0)
			var s []string
			for _, tt := range got {
				s = append(s, tt.Key+":"+string(tt.Effect))
				if tt.Effect == corev1.TaintEffectNoExecute && tt.TimeAdded == nil {
					t.Errorf("NoExecute taint %s without TimeAdded", tt.Key)
				}
				if tt.Key == TaintUnreachable && tt.Effect == corev1.TaintEffectNoExecute && !tc.changed && !tt.TimeAdded.Equal(&old) {
					t.Errorf("existing taint's TimeAdded changed")
				}
			}
			if changed != tc.changed || !slices.Equal(s, tc.want) {
				t.Fatalf("taints = %v (changed %v), want %v (changed %v)", s, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestEvictionPlan(t *testing.T) {
	added := metav1.NewTime(t0)
	taints := []corev1.Taint{{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}, {Key: TaintUnreachable, Effect: corev1.TaintEffectNoSchedule}}
	secs := func(n int64) *int64 { return &n }
	pod := func(name string, tols ...corev1.Toleration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Tolerations: tols}}
	}
	unreach := func(s *int64) corev1.Toleration {
		return corev1.Toleration{Key: TaintUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	pods := []*corev1.Pod{
		pod("intolerant"),
		pod("five-minutes", unreach(secs(300))),
		pod("ten-seconds", unreach(secs(10))),
		pod("forever", unreach(nil)),
		pod("wildcard", corev1.Toleration{Operator: corev1.TolerationOpExists}),
		pod("wrong-key", corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}),
		pod("min-of-two", unreach(secs(200)), corev1.Toleration{Operator: corev1.TolerationOpExists, TolerationSeconds: secs(5)}),
	}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	for _, tc := range []struct {
		at       time.Duration
		want     []string
		wantNext time.Duration
	}{
		{0, []string{"intolerant", "wrong-key"}, 5 * time.Second},
		{6 * time.Second, []string{"intolerant", "wrong-key", "min-of-two"}, 4 * time.Second},
		{11 * time.Second, []string{"intolerant", "ten-seconds", "wrong-key", "min-of-two"}, 289 * time.Second},
		{301 * time.Second, []string{"intolerant", "five-minutes", "ten-seconds", "wrong-key", "min-of-two"}, 0},
	} {
		got, next := EvictionPlan(taints, pods, t0.Add(tc.at))
		if !slices.Equal(names(got), tc.want) || next != tc.wantNext {
			t.Errorf("at +%v: evict %v next %v; want %v next %v", tc.at, names(got), next, tc.want, tc.wantNext)
		}
	}
	if got, _ := EvictionPlan(nil, pods, t0); len(got) != 0 {
		t.Fatalf("no taints: evicted %v", names(got))
	}
}
