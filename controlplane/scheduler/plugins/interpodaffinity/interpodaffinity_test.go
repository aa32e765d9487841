package interpodaffinity

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func term(app, key string, namespaces ...string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: key, Namespaces: namespaces}
}

func affinity(terms ...v1.PodAffinityTerm) *v1.Affinity {
	return &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
}

func antiAffinity(terms ...v1.PodAffinityTerm) *v1.Affinity {
	return &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
}

func nodes() []*v1.Node {
	return []*v1.Node{
		st.Node("a1", st.Labels("zone", "a")), st.Node("a2", st.Labels("zone", "a")),
		st.Node("b1", st.Labels("zone", "b")), st.Node("nozone"),
	}
}

func TestFilter(t *testing.T) {
	existing := []*v1.Pod{
		st.Pod("db", st.OnNode("a1"), st.PodLabels("app", "db")),
		// guard keeps app=web pods out of zone b.
		st.Pod("guard", st.OnNode("b1"), st.PodLabels("app", "guard"), st.WithAffinity(antiAffinity(term("web", "zone")))),
	}
	snap := st.Snapshot(t, nodes(), existing...)
	noAff := st.FilterResult{Code: fw.UnschedulableAndUnresolvable, Reasons: []string{ErrReasonAffinityRulesNotMatch}}
	noAnti := st.FilterResult{Code: fw.Unschedulable, Reasons: []string{ErrReasonAntiAffinityRulesNotMatch}}
	noExisting := st.FilterResult{Code: fw.Unschedulable, Reasons: []string{ErrReasonExistingAntiAffinityRulesNotMatch}}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]st.FilterResult
	}{
		{"no terms", st.Pod("p"), map[string]st.FilterResult{"a1": {}, "a2": {}, "b1": {}, "nozone": {}}},
		{"affinity to db by zone", st.Pod("p", st.WithAffinity(affinity(term("db", "zone")))),
			map[string]st.FilterResult{"a1": {}, "a2": {}, "b1": noAff, "nozone": noAff}},
		{"affinity to db by hostname", st.Pod("p", st.WithAffinity(affinity(term("db", v1.LabelHostname)))),
			map[string]st.FilterResult{"a1": {}, "a2": noAff, "b1": noAff, "nozone": noAff}},
		{"anti-affinity to db by hostname", st.Pod("p", st.WithAffinity(antiAffinity(term("db", v1.LabelHostname)))),
			map[string]st.FilterResult{"a1": noAnti, "a2": {}, "b1": {}, "nozone": {}}},
		{"anti-affinity to db by zone; nodes without the key pass", st.Pod("p", st.WithAffinity(antiAffinity(term("db", "zone")))),
			map[string]st.FilterResult{"a1": noAnti, "a2": noAnti, "b1": {}, "nozone": {}}},
		{"existing pod's anti-affinity rejects its zone", st.Pod("p", st.PodLabels("app", "web")),
			map[string]st.FilterResult{"a1": {}, "a2": {}, "b1": noExisting, "nozone": {}}},
		{"first pod of a self-affine group may go anywhere with the key", st.Pod("p", st.PodLabels("app", "cache"), st.WithAffinity(affinity(term("cache", "zone")))),
			map[string]st.FilterResult{"a1": {}, "a2": {}, "b1": {}, "nozone": noAff}},
		{"term in another namespace does not see db", st.Pod("p", st.WithAffinity(affinity(term("db", "zone", "other")))),
			map[string]st.FilterResult{"a1": noAff, "a2": noAff, "b1": noAff, "nozone": noAff}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunFilter(t, New(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilterNamespaceSelector(t *testing.T) {
	snap := st.Snapshot(t, nodes(), st.Pod("db", st.Namespace("prod"), st.OnNode("b1"), st.PodLabels("app", "db")))
	snap.NamespaceLabels = func(ns string) labels.Set {
		if ns == "prod" {
			return labels.Set{"env": "prod"}
		}
		return nil
	}
	tm := term("db", "zone")
	tm.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	got := st.RunFilter(t, New(), st.Pod("p", st.WithAffinity(affinity(tm))), snap)
	if got["b1"].Code != fw.Success || got["a1"].Code != fw.UnschedulableAndUnresolvable {
		t.Errorf("namespaceSelector env=prod: got %v, want only zone b", got)
	}
}

func TestScore(t *testing.T) {
	existing := []*v1.Pod{
		st.Pod("db", st.OnNode("a1"), st.PodLabels("app", "db")),
		// "fan" prefers pods labelled app=web near it (symmetric weight 20).
		st.Pod("fan", st.OnNode("b1"), st.WithAffinity(&v1.Affinity{PodAffinity: &v1.PodAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 20, PodAffinityTerm: term("web", v1.LabelHostname)}},
		}})),
	}
	snap := st.Snapshot(t, nodes(), existing...)
	pref := func(anti bool, w int32, tm v1.PodAffinityTerm) st.PodOpt {
		wt := []v1.WeightedPodAffinityTerm{{Weight: w, PodAffinityTerm: tm}}
		if anti {
			return st.WithAffinity(&v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: wt}})
		}
		return st.WithAffinity(&v1.Affinity{PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: wt}})
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		{"preferred affinity to db's zone", st.Pod("p", pref(false, 50, term("db", "zone"))),
			map[string]int64{"a1": 100, "a2": 100, "b1": 0, "nozone": 0}},
		// a1 -50, others 0 → min -50 max 0.
		{"preferred anti-affinity to db's host", st.Pod("p", pref(true, 50, term("db", v1.LabelHostname))),
			map[string]int64{"a1": 0, "a2": 100, "b1": 100, "nozone": 100}},
		{"existing pod's preference for the incoming pod", st.Pod("p", st.PodLabels("app", "web")),
			map[string]int64{"a1": 0, "a2": 0, "b1": 100, "nozone": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunScore(t, New(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
