package nodename

import (
	v1 "k8s.io/api/core/v1"
	"reflect"
	"testing"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func TestFilter(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{st.Node("n1"), st.Node("n2")})
	tests := []struct {
		name string
		pod  string
		want map[string]st.FilterResult
	}{
		{"no node name fits every node", "", map[string]st.FilterResult{"n1": {}, "n2": {}}},
		{"named node fits only that node", "n1", map[string]st.FilterResult{
			"n1": {},
			"n2": {Code: fw.UnschedulableAndUnresolvable, Reasons: []string{ErrReason}},
		}},
		{"unknown node fits none", "n9", map[string]st.FilterResult{
			"n1": {Code: fw.UnschedulableAndUnresolvable, Reasons: []string{ErrReason}},
			"n2": {Code: fw.UnschedulableAndUnresolvable, Reasons: []string{ErrReason}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := st.RunFilter(t, New(), st.Pod("p", st.OnNode(tc.pod)), snap)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
