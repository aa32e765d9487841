// Package routes connects the nodes' pod networks host-gw style: on each
// node, a route to every other Node's pod CIDR via that node's InternalIP,
// when the peer is on a subnet this node is attached to (one L2 segment).
// Pod traffic leaving the cluster's pod ranges (the union of the Nodes' pod
// CIDRs) is masqueraded; pod-to-pod traffic between nodes keeps its
// addresses.
//
// Compute is the pure plan (Nodes + local subnets → routes, unreachable
// peers, pod ranges); the Controller watches the Nodes, applies the plan with
// netlink and nftables, and re-asserts it when a route of its own is deleted
// (netlink route subscription) and every ResyncPeriod.
package routes

import (
	"fmt"
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Route is a route to a peer node's pod CIDR through its InternalIP.
type Route struct {
	// Dst is the peer's pod CIDR; Via its InternalIP, on the local link
	// LinkIndex.
	Dst       netip.Prefix
	Via       netip.Addr
	LinkIndex int
	// Node names the peer.
	Node string
}

// Subnet is an address of a local interface: the subnet it is attached to.
type Subnet struct {
	LinkIndex int
	Prefix    netip.Prefix // the interface's address with the subnet's length
}

// Unreachable is a peer with a pod CIDR whose InternalIP is on no subnet
// this node is attached to: no route is added for it.
type Unreachable struct {
	Node       string
	PodCIDR    netip.Prefix
	InternalIP netip.Addr // invalid: the Node has none
}

// Message says why the peer gets no route and what the user can do.
func (u Unreachable) Message() string {
	if !u.InternalIP.IsValid() {
		return fmt.Sprintf("node %s has no IPv4 InternalIP: no route to its pod CIDR %s, pods here cannot reach its pods", u.Node, u.PodCIDR)
	}
	return fmt.Sprintf("node %s (InternalIP %s) is not on a network segment this node is attached to: no route to its pod CIDR %s, "+
		"pods here cannot reach its pods; put the nodes on one L2 segment, add a route for %s via %s on your router, "+
		"or use an encapsulating CNI (VXLAN) instead of berth's host-gw routes", u.Node, u.InternalIP, u.PodCIDR, u.PodCIDR, u.InternalIP)
}

// Plan is what the node's pod routing should be.
type Plan struct {
	Routes      []Route       // sorted by Dst
	Unreachable []Unreachable // sorted by Node
	// PodRanges are every Node's pod CIDRs (this node's too): traffic
	// from a pod to them is not masqueraded.
	PodRanges []netip.Prefix
}

// Compute plans the routes of node self from the Nodes and the local
// subnets. A peer is skipped (neither routed nor unreachable) when it shares
// an address with this node (several agents on one host) or when its pod
// CIDR overlaps a local subnet (the pods are already on-link here); a peer
// on a local subnet is routed through that subnet's link; any other peer is
// Unreachable. Only IPv4 is planned.
func Compute(self string, nodes []*v1.Node, local []Subnet) Plan {
	var p Plan
	for _, n := range nodes {
		cidrs := podCIDRs(n)
		p.PodRanges = append(p.PodRanges, cidrs...)
		if n.Name == self {
			continue
		}
		ip := internalIP(n)
		for _, cidr := range cidrs {
			if overlapsLocal(cidr, local) || isLocalAddr(ip, local) {
				continue
			}
			link, ok := onLink(ip, local)
			if !ok {
				p.Unreachable = append(p.Unreachable, Unreachable{Node: n.Name, PodCIDR: cidr, InternalIP: ip})
				continue
			}
			p.Routes = append(p.Routes, Route{Dst: cidr, Via: ip, LinkIndex: link, Node: n.Name})
		}
	}
	slices.SortFunc(p.Routes, func(a, b Route) int { return comparePrefix(a.Dst, b.Dst) })
	slices.SortFunc(p.Unreachable, func(a, b Unreachable) int {
		if a.Node != b.Node {
			if a.Node < b.Node {
				return -1
			}
			return 1
		}
		return comparePrefix(a.PodCIDR, b.PodCIDR)
	})
	slices.SortFunc(p.PodRanges, comparePrefix)
	p.PodRanges = slices.Compact(p.PodRanges)
	return p
}

// podCIDRs are the Node's IPv4 pod CIDRs (spec.podCIDRs, else spec.podCIDR).
func podCIDRs(n *v1.Node) []netip.Prefix {
	list := n.Spec.PodCIDRs
	if len(list) == 0 && n.Spec.PodCIDR != "" {
		list = []string{n.Spec.PodCIDR}
	}
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
			out = append(out, p.Masked())
		}
	}
	return out
}

// internalIP is the Node's first IPv4 InternalIP (invalid when none).
func internalIP(n *v1.Node) netip.Addr {
	for _, a := range n.Status.Addresses {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Unmap().Is4() {
			return ip.Unmap()
		}
	}
	return netip.Addr{}
}

func overlapsLocal(p netip.Prefix, local []Subnet) bool {
	for _, s := range local {
		if s.Prefix.Masked().Overlaps(p) {
			return true
		}
	}
	return false
}

func isLocalAddr(ip netip.Addr, local []Subnet) bool {
	if !ip.IsValid() {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	for _, s := range local {
		if s.Prefix.Addr() == ip {
			return true
		}
	}
	return false
}

// onLink finds the local subnet holding ip; the most specific wins.
func onLink(ip netip.Addr, local []Subnet) (int, bool) {
	best, bits := 0, -1
	if !ip.IsValid() {
		return 0, false
	}
	for _, s := range local {
		if s.Prefix.Masked().Contains(ip) && s.Prefix.Bits() > bits && !s.Prefix.Addr().IsLoopback() {
			best, bits = s.LinkIndex, s.Prefix.Bits()
		}
	}
	return best, bits >= 0
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}
