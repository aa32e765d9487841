package podtopologyspread

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func web(name, node string, opts ...st.PodOpt) *v1.Pod {
	return st.Pod(name, append([]st.PodOpt{st.OnNode(node), st.PodLabels("app", "web")}, opts...)...)
}

func TestFilterDoNotSchedule(t *testing.T) {
	nodes := []*v1.Node{
		st.Node("a1", st.Labels("zone", "a")), st.Node("a2", st.Labels("zone", "a")),
		st.Node("b1", st.Labels("zone", "b")), st.Node("nolabel"),
	}
	pods := []*v1.Pod{
		web("w1", "a1"), web("w2", "a2"), web("w3", "b1"),
		// not counted: other namespace, other labels, terminating.
		web("other-ns", "b1", st.Namespace("other")),
		st.Pod("db", st.OnNode("b1"), st.PodLabels("app", "db")),
		web("terminating", "b1", func(p *v1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }),
	}
	snap := st.Snapshot(t, nodes, pods...)
	skew := st.FilterResult{Code: fw.Unschedulable, Reasons: []string{ErrReasonConstraintsNotMatch}}
	missing := st.FilterResult{Code: fw.UnschedulableAndUnresolvable, Reasons: []string{ErrReasonNodeLabelNotMatch}}
	minDomains := func(n int32) st.PodOpt {
		return func(p *v1.Pod) { p.Spec.TopologySpreadConstraints[0].MinDomains = &n }
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]st.FilterResult
	}{
		// zone a has 2, zone b 1: a would have skew 2+1-1 = 2.
		{"maxSkew 1 sends the pod to the emptier zone", st.Pod("p", st.PodLabels("app", "web"), st.Spread("zone", 1, v1.DoNotSchedule, "web")),
			map[string]st.FilterResult{"a1": skew, "a2": skew, "b1": {}, "nolabel": missing}},
		{"maxSkew 2 allows either zone", st.Pod("p", st.PodLabels("app", "web"), st.Spread("zone", 2, v1.DoNotSchedule, "web")),
			map[string]st.FilterResult{"a1": {}, "a2": {}, "b1": {}, "nolabel": missing}},
		// the incoming pod does not match its selector: a 2-0-1 = 1 ≤ 1.
		{"a pod outside the selector does not count itself", st.Pod("p", st.Spread("zone", 1, v1.DoNotSchedule, "web")),
			map[string]st.FilterResult{"a1": {}, "a2": {}, "b1": {}, "nolabel": missing}},
		// only 2 domains but minDomains 3: global minimum is 0, b: 1+1-0 = 2.
		{"fewer domains than minDomains", st.Pod("p", st.PodLabels("app", "web"), st.Spread("zone", 1, v1.DoNotSchedule, "web"), minDomains(3)),
			map[string]st.FilterResult{"a1": skew, "a2": skew, "b1": skew, "nolabel": missing}},
		// per hostname: a1, a2 and b1 have 1 each, "nolabel" (which has a hostname label) 0.
		{"hostname spread", st.Pod("p", st.PodLabels("app", "web"), st.Spread(v1.LabelHostname, 1, v1.DoNotSchedule, "web")),
			map[string]st.FilterResult{"a1": skew, "a2": skew, "b1": skew, "nolabel": {}}},
		{"ScheduleAnyway constraints do not filter", st.Pod("p", st.PodLabels("app", "web"), st.Spread("zone", 1, v1.ScheduleAnyway, "web")),
			map[string]st.FilterResult{"a1": {}, "a2": {}, "b1": {}, "nolabel": {}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunFilter(t, New(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilterHonorsNodeAffinity(t *testing.T) {
	// zone c is excluded by the pod's node selector, so its emptiness does
	// not lower the minimum (nodeAffinityPolicy Honor, the default).
	nodes := []*v1.Node{
		st.Node("a1", st.Labels("zone", "a", "pool", "x")), st.Node("b1", st.Labels("zone", "b", "pool", "x")),
		st.Node("c1", st.Labels("zone", "c", "pool", "y")),
	}
	snap := st.Snapshot(t, nodes, web("w1", "a1"), web("w2", "b1"))
	got := st.RunFilter(t, New(), st.Pod("p", st.PodLabels("app", "web"), st.NodeSelector("pool", "x"), st.Spread("zone", 1, v1.DoNotSchedule, "web")), snap)
	for _, n := range []string{"a1", "b1"} {
		if got[n].Code != fw.Success {
			t.Errorf("node %s: got %v, want success (skew 1+1-1)", n, got[n])
		}
	}
}

func TestScoreScheduleAnyway(t *testing.T) {
	nodes := []*v1.Node{st.Node("n1"), st.Node("n2"), st.Node("n3")}
	snap := st.Snapshot(t, nodes, web("w1", "n1"), web("w2", "n1"), web("w3", "n3"))
	// weight log(3+2) ≈ 1.609: raw n1 2*1.609 → 3, n2 0, n3 → 2;
	// normalized 100*(max+min-s)/max: n1 0, n2 100, n3 33.
	want := map[string]int64{"n1": 0, "n2": 100, "n3": 33}
	pod := st.Pod("p", st.PodLabels("app", "web"), st.Spread(v1.LabelHostname, 1, v1.ScheduleAnyway, "web"))
	if got := st.RunScore(t, New(), pod, snap); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := st.RunScore(t, New(), st.Pod("p", st.Spread(v1.LabelHostname, 1, v1.DoNotSchedule, "web")), snap); got != nil {
		t.Errorf("DoNotSchedule-only pod scored %v, want the score skipped", got)
	}
}

func TestScoreZonesAndIgnoredNodes(t *testing.T) {
	nodes := []*v1.Node{st.Node("a1", st.Labels("zone", "a")), st.Node("a2", st.Labels("zone", "a")), st.Node("b1", st.Labels("zone", "b")), st.Node("x")}
	snap := st.Snapshot(t, nodes, web("w1", "a1"), web("w2", "a2"), web("w3", "b1"))
	// zone a: 2, b: 1; weight log(2+2) ≈ 1.386: a → 3, b → 1; x lacks the key → 0.
	// normalized: a 100*(3+1-3)/3 = 33, b 100*(3+1-1)/3 = 100.
	want := map[string]int64{"a1": 33, "a2": 33, "b1": 100, "x": 0}
	pod := st.Pod("p", st.PodLabels("app", "web"), st.Spread("zone", 1, v1.ScheduleAnyway, "web"))
	if got := st.RunScore(t, New(), pod, snap); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
