package nodeaffinity

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func required(terms ...v1.NodeSelectorTerm) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
}

func term(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func TestFilter(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{
		st.Node("a1", st.Labels("zone", "a", "disk", "ssd")),
		st.Node("a2", st.Labels("zone", "a")),
		st.Node("b1", st.Labels("zone", "b", "disk", "ssd")),
	})
	no := st.FilterResult{Code: fw.UnschedulableAndUnresolvable, Reasons: []string{ErrReason}}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]st.FilterResult
	}{
		{"no selector fits all", st.Pod("p"), map[string]st.FilterResult{"a1": {}, "a2": {}, "b1": {}}},
		{"nodeSelector", st.Pod("p", st.NodeSelector("zone", "a")), map[string]st.FilterResult{"a1": {}, "a2": {}, "b1": no}},
		{"required In", st.Pod("p", st.WithAffinity(required(term("zone", v1.NodeSelectorOpIn, "b")))),
			map[string]st.FilterResult{"a1": no, "a2": no, "b1": {}}},
		{"required terms are ORed", st.Pod("p", st.WithAffinity(required(term("zone", v1.NodeSelectorOpIn, "b"), term("disk", v1.NodeSelectorOpDoesNotExist)))),
			map[string]st.FilterResult{"a1": no, "a2": {}, "b1": {}}},
		{"nodeSelector and required affinity are ANDed", st.Pod("p", st.NodeSelector("zone", "a"), st.WithAffinity(required(term("disk", v1.NodeSelectorOpExists)))),
			map[string]st.FilterResult{"a1": {}, "a2": no, "b1": no}},
		{"metadata.name field selector", st.Pod("p", st.WithAffinity(required(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"a2"}}}}))),
			map[string]st.FilterResult{"a1": no, "a2": {}, "b1": no}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunFilter(t, New(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestScorePreferred(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{
		st.Node("a-ssd", st.Labels("zone", "a", "disk", "ssd")),
		st.Node("a", st.Labels("zone", "a")),
		st.Node("b-ssd", st.Labels("zone", "b", "disk", "ssd")),
		st.Node("b", st.Labels("zone", "b")),
	})
	pref := &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
		{Weight: 10, Preference: term("zone", v1.NodeSelectorOpIn, "a")},
		{Weight: 5, Preference: term("disk", v1.NodeSelectorOpIn, "ssd")},
	}}}
	if got := st.RunScore(t, New(), st.Pod("p"), snap); got != nil {
		t.Errorf("pod without preferences: scored %v, want the plugin skipped", got)
	}
	want := map[string]int64{"a-ssd": 100, "a": 66, "b-ssd": 33, "b": 0}
	if got := st.RunScore(t, New(), st.Pod("p", st.WithAffinity(pref)), snap); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
