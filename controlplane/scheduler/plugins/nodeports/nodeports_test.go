package nodeports

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func TestFilter(t *testing.T) {
	nodes := []*v1.Node{st.Node("any"), st.Node("local"), st.Node("udp"), st.Node("ip1"), st.Node("free")}
	existing := []*v1.Pod{
		st.Pod("e1", st.OnNode("any"), st.HostPort(v1.ProtocolTCP, "", 8080)),
		st.Pod("e2", st.OnNode("local"), st.HostPort(v1.ProtocolTCP, "127.0.0.1", 8080)),
		st.Pod("e3", st.OnNode("udp"), st.HostPort(v1.ProtocolUDP, "", 8080)),
		st.Pod("e4", st.OnNode("ip1"), st.HostPort(v1.ProtocolTCP, "10.0.0.1", 8080)),
	}
	snap := st.Snapshot(t, nodes, existing...)
	busy := st.FilterResult{Code: fw.Unschedulable, Reasons: []string{ErrReason}}
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]st.FilterResult
	}{
		{"no host ports fit anywhere", st.Pod("p"), map[string]st.FilterResult{"any": {}, "local": {}, "udp": {}, "ip1": {}, "free": {}}},
		{"port on all addresses conflicts with any IP of the same protocol", st.Pod("p", st.HostPort("", "", 8080)),
			map[string]st.FilterResult{"any": busy, "local": busy, "udp": {}, "ip1": busy, "free": {}}},
		{"specific IP conflicts with the same IP and with 0.0.0.0", st.Pod("p", st.HostPort(v1.ProtocolTCP, "10.0.0.1", 8080)),
			map[string]st.FilterResult{"any": busy, "local": {}, "udp": {}, "ip1": busy, "free": {}}},
		{"other IP does not conflict", st.Pod("p", st.HostPort(v1.ProtocolTCP, "10.0.0.2", 8080)),
			map[string]st.FilterResult{"any": busy, "local": {}, "udp": {}, "ip1": {}, "free": {}}},
		{"UDP conflicts only with UDP", st.Pod("p", st.HostPort(v1.ProtocolUDP, "", 8080)),
			map[string]st.FilterResult{"any": {}, "local": {}, "udp": busy, "ip1": {}, "free": {}}},
		{"other port is free", st.Pod("p", st.HostPort(v1.ProtocolTCP, "", 9090)),
			map[string]st.FilterResult{"any": {}, "local": {}, "udp": {}, "ip1": {}, "free": {}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunFilter(t, New(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
