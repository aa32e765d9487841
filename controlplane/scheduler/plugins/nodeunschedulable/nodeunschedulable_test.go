package nodeunschedulable

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func TestFilter(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{st.Node("ok"), st.Node("cordoned", st.Unschedulable())})
	rejected := st.FilterResult{Code: fw.UnschedulableAndUnresolvable, Reasons: []string{ErrReason}}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]st.FilterResult
	}{
		{"cordoned node rejects a plain pod", st.Pod("p"), map[string]st.FilterResult{"ok": {}, "cordoned": rejected}},
		{"toleration of the unschedulable taint admits", st.Pod("p", st.Tolerations(v1.Toleration{
			Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule,
		})), map[string]st.FilterResult{"ok": {}, "cordoned": {}}},
		{"toleration of every taint admits", st.Pod("p", st.Tolerations(v1.Toleration{Operator: v1.TolerationOpExists})),
			map[string]st.FilterResult{"ok": {}, "cordoned": {}}},
		{"NoExecute-only toleration does not admit", st.Pod("p", st.Tolerations(v1.Toleration{
			Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute,
		})), map[string]st.FilterResult{"ok": {}, "cordoned": rejected}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunFilter(t, New(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
