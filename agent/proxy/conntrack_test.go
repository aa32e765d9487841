package proxy

import (
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

func TestStaleUDPFilter(t *testing.T) {
	svc := service("dns", func(s *v1.Service) {
		s.Spec.Type = v1.ServiceTypeNodePort
		s.Spec.Ports = []v1.ServicePort{{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053}}
	})
	sl := slice("dns", "dns", 5353, ep{ip: "10.244.0.5"})
	sl.Ports[0].Protocol = ptr.To(v1.ProtocolUDP)
	rs := Build([]*v1.Service{svc}, []*discoveryv1.EndpointSlice{sl}, testParams)
	f := staleUDPFilter{targets: rs.UDP, nodeIPs: map[netip.Addr]bool{netip.MustParseAddr("192.168.1.5"): true}}
	flow := func(proto uint8, dst string, dport uint16, from string, fport uint16) *netlink.ConntrackFlow {
		return &netlink.ConntrackFlow{
			Forward: netlink.IPTuple{Protocol: proto, SrcIP: net.ParseIP("10.244.0.9"), SrcPort: 40000, DstIP: net.ParseIP(dst), DstPort: dport},
			Reverse: netlink.IPTuple{Protocol: proto, SrcIP: net.ParseIP(from), SrcPort: fport, DstIP: net.ParseIP("10.244.0.9"), DstPort: 40000},
		}
	}
	for _, tc := range []struct {
		name string
		flow *netlink.ConntrackFlow
		want bool
	}{
		{"to the current endpoint", flow(unix.IPPROTO_UDP, "10.96.0.10", 53, "10.244.0.5", 5353), false},
		{"to a gone endpoint", flow(unix.IPPROTO_UDP, "10.96.0.10", 53, "10.244.0.6", 5353), true},
		{"not DNATed, from when there was no endpoint", flow(unix.IPPROTO_UDP, "10.96.0.10", 53, "10.96.0.10", 53), true},
		{"NodePort to a gone endpoint", flow(unix.IPPROTO_UDP, "192.168.1.5", 30053, "10.244.0.6", 5353), true},
		{"NodePort to the current endpoint", flow(unix.IPPROTO_UDP, "192.168.1.5", 30053, "10.244.0.5", 5353), false},
		{"TCP is left alone", flow(unix.IPPROTO_TCP, "10.96.0.10", 53, "10.244.0.6", 5353), false},
		{"another destination", flow(unix.IPPROTO_UDP, "10.96.0.99", 53, "10.244.0.6", 5353), false},
	} {
		if got := f.MatchConntrackFlow(tc.flow); got != tc.want {
			t.Errorf("%s: stale = %v, want %v", tc.name, got, tc.want)
		}
	}
}
