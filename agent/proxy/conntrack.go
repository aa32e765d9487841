package proxy

import (
	"maps"
	"net/netip"
	"strconv"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// udpTargets are, for each UDP destination of the services (a ClusterIP or
// ExternalIP "ip:port", or a NodePort "nodeport:N"), the endpoints
// ("ip:port") traffic to it may be DNATed to now.
type udpTargets map[string]map[string]bool

func (t udpTargets) add(target string, eps []endpoint) {
	if t[target] == nil {
		t[target] = map[string]bool{}
	}
	for _, ep := range eps {
		t[target][netip.AddrPortFrom(netip.MustParseAddr(ep.ip), uint16(ep.port)).String()] = true
	}
}

func (t udpTargets) equal(o udpTargets) bool {
	return maps.EqualFunc(t, o, func(a, b map[string]bool) bool { return maps.Equal(a, b) })
}

// staleUDPFilter matches the conntrack entries of UDP flows to a service
// that go to an endpoint it no longer has (or, not DNATed, to the service
// address itself from when it had none): UDP has no connection to end, so
// without their deletion a client keeps sending to the gone endpoint for as
// long as it keeps sending (kube-proxy's conntrack cleanup).
type staleUDPFilter struct {
	targets udpTargets
	// nodeIPs are the addresses NodePorts are served on.
	nodeIPs map[netip.Addr]bool
}

// MatchConntrackFlow implements netlink.CustomConntrackFilter.
func (f staleUDPFilter) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	if flow.Forward.Protocol != unix.IPPROTO_UDP {
		return false
	}
	dst, ok := netip.AddrFromSlice(flow.Forward.DstIP)
	if !ok {
		return false
	}
	dst = dst.Unmap()
	allowed, ok := f.targets[netip.AddrPortFrom(dst, flow.Forward.DstPort).String()]
	if !ok && f.nodeIPs[dst] {
		allowed, ok = f.targets["nodeport:"+strconv.Itoa(int(flow.Forward.DstPort))]
	}
	if !ok {
		return false
	}
	// The reply comes from where the flow was DNATed to.
	to, ok := netip.AddrFromSlice(flow.Reverse.SrcIP)
	if !ok {
		return false
	}
	return !allowed[netip.AddrPortFrom(to.Unmap(), flow.Reverse.SrcPort).String()]
}

// deleteStaleUDPFlows deletes the host's conntrack entries f matches.
func deleteStaleUDPFlows(f staleUDPFilter) (uint, error) {
	return netlink.ConntrackDeleteFilters(netlink.ConntrackTable, unix.AF_INET, f)
}
