package routes

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, podCIDR, ip string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{PodCIDR: podCIDR}}
	if podCIDR != "" {
		n.Spec.PodCIDRs = []string{podCIDR}
	}
	if ip != "" {
		n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: name}, {Type: v1.NodeInternalIP, Address: ip}}
	}
	return n
}

var (
	p  = netip.MustParsePrefix
	ip = netip.MustParseAddr
)

func TestCompute(t *testing.T) {
	underlay := Subnet{LinkIndex: 2, Prefix: p("10.254.64.11/24")}
	bridge := Subnet{LinkIndex: 5, Prefix: p("10.64.1.1/24")}
	lo := Subnet{LinkIndex: 1, Prefix: p("127.0.0.1/8")}
	for _, tc := range []struct {
		name  string
		nodes []*v1.Node
		local []Subnet
		want  Plan
	}{{
		name:  "peers on the segment are routed, self and nodes without a podCIDR are not",
		nodes: []*v1.Node{node("a", "10.64.1.0/24", "10.254.64.11"), node("c", "10.64.3.0/24", "10.254.64.13"), node("b", "10.64.2.0/24", "10.254.64.12"), node("new", "", "10.254.64.14")},
		local: []Subnet{lo, underlay, bridge},
		want: Plan{
			Routes: []Route{
				{Dst: p("10.64.2.0/24"), Via: ip("10.254.64.12"), LinkIndex: 2, Node: "b"},
				{Dst: p("10.64.3.0/24"), Via: ip("10.254.64.13"), LinkIndex: 2, Node: "c"},
			},
			PodRanges: []netip.Prefix{p("10.64.1.0/24"), p("10.64.2.0/24"), p("10.64.3.0/24")},
		},
	}, {
		name:  "a peer off the segment or without an InternalIP is unreachable",
		nodes: []*v1.Node{node("a", "10.64.1.0/24", "10.254.64.11"), node("far", "10.64.9.0/24", "192.0.2.7"), node("noip", "10.64.8.0/24", "")},
		local: []Subnet{underlay, bridge},
		want: Plan{
			Unreachable: []Unreachable{{Node: "far", PodCIDR: p("10.64.9.0/24"), InternalIP: ip("192.0.2.7")}, {Node: "noip", PodCIDR: p("10.64.8.0/24")}},
			PodRanges:   []netip.Prefix{p("10.64.1.0/24"), p("10.64.8.0/24"), p("10.64.9.0/24")},
		},
	}, {
		// Several agents on one host (the single-machine tests): every node
		// is 127.0.0.1 and each pod CIDR is on a local bridge already.
		name:  "peers sharing this host's address or on-link pod CIDRs are skipped",
		nodes: []*v1.Node{node("a", "10.64.1.0/25", "127.0.0.1"), node("b", "10.64.1.128/25", "127.0.0.1"), node("c", "10.64.5.0/24", "10.254.64.11")},
		local: []Subnet{lo, underlay, {LinkIndex: 6, Prefix: p("10.64.1.1/25")}},
		want:  Plan{PodRanges: []netip.Prefix{p("10.64.1.0/25"), p("10.64.1.128/25"), p("10.64.5.0/24")}},
	}, {
		name:  "the most specific local subnet carries the route",
		nodes: []*v1.Node{node("a", "10.64.1.0/24", "10.254.64.11"), node("b", "10.64.2.0/24", "10.254.64.130")},
		local: []Subnet{{LinkIndex: 2, Prefix: p("10.254.0.1/16")}, {LinkIndex: 3, Prefix: p("10.254.64.129/25")}},
		want: Plan{
			Routes:    []Route{{Dst: p("10.64.2.0/24"), Via: ip("10.254.64.130"), LinkIndex: 3, Node: "b"}},
			PodRanges: []netip.Prefix{p("10.64.1.0/24"), p("10.64.2.0/24")},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Compute("a", tc.nodes, tc.local)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("Compute (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnreachableMessageSaysWhatToDo(t *testing.T) {
	msg := Unreachable{Node: "far", PodCIDR: p("10.64.9.0/24"), InternalIP: ip("192.0.2.7")}.Message()
	for _, want := range []string{"far", "192.0.2.7", "10.64.9.0/24", "one L2 segment", "router", "encapsulating CNI"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestDisjoint(t *testing.T) {
	got := disjoint([]netip.Prefix{p("10.0.0.0/8"), p("10.1.0.0/16"), p("10.64.0.0/24"), p("192.168.0.0/24")})
	want := []netip.Prefix{p("10.0.0.0/8"), p("192.168.0.0/24")}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("disjoint = %v, want %v", got, want)
	}
}
