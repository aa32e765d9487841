package tainttoleration

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func taint(k, v string, e v1.TaintEffect) v1.Taint { return v1.Taint{Key: k, Value: v, Effect: e} }

func TestFilter(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{
		st.Node("plain"),
		st.Node("gpu", st.Taints(taint("dedicated", "gpu", v1.TaintEffectNoSchedule))),
		st.Node("soft", st.Taints(taint("spot", "true", v1.TaintEffectPreferNoSchedule))),
		st.Node("evict", st.Taints(taint("broken", "", v1.TaintEffectNoExecute))),
	})
	gpuRejected := st.FilterResult{Code: fw.UnschedulableAndUnresolvable, Reasons: []string{"node(s) had untolerated taint {dedicated: gpu}"}}
	evictRejected := st.FilterResult{Code: fw.UnschedulableAndUnresolvable, Reasons: []string{"node(s) had untolerated taint {broken: }"}}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]st.FilterResult
	}{
		{"untolerated NoSchedule and NoExecute reject, PreferNoSchedule does not", st.Pod("p"),
			map[string]st.FilterResult{"plain": {}, "gpu": gpuRejected, "soft": {}, "evict": evictRejected}},
		{"Equal toleration with the value admits", st.Pod("p", st.Tolerations(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule})),
			map[string]st.FilterResult{"plain": {}, "gpu": {}, "soft": {}, "evict": evictRejected}},
		{"Equal toleration with another value does not", st.Pod("p", st.Tolerations(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "tpu"})),
			map[string]st.FilterResult{"plain": {}, "gpu": gpuRejected, "soft": {}, "evict": evictRejected}},
		{"Exists without key tolerates everything", st.Pod("p", st.Tolerations(v1.Toleration{Operator: v1.TolerationOpExists})),
			map[string]st.FilterResult{"plain": {}, "gpu": {}, "soft": {}, "evict": {}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunFilter(t, New(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestScorePreferNoSchedule(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{
		st.Node("none"),
		st.Node("one", st.Taints(taint("a", "1", v1.TaintEffectPreferNoSchedule))),
		st.Node("two", st.Taints(taint("a", "1", v1.TaintEffectPreferNoSchedule), taint("b", "2", v1.TaintEffectPreferNoSchedule))),
		st.Node("hard", st.Taints(taint("c", "3", v1.TaintEffectNoSchedule))),
	})
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		{"fewer untolerated PreferNoSchedule taints score higher", st.Pod("p"),
			map[string]int64{"none": 100, "one": 50, "two": 0, "hard": 100}},
		{"tolerated taints do not count", st.Pod("p", st.Tolerations(v1.Toleration{Key: "a", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule})),
			map[string]int64{"none": 100, "one": 100, "two": 0, "hard": 100}},
		{"NoSchedule-only tolerations do not apply to PreferNoSchedule", st.Pod("p", st.Tolerations(v1.Toleration{Key: "a", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})),
			map[string]int64{"none": 100, "one": 50, "two": 0, "hard": 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunScore(t, New(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
