package routes

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Protocol marks berth's routes (the route's protocol, as `ip route`
// shows "proto 66"): the controller owns exactly the main table's routes
// with it, adding, replacing and deleting only those.
const Protocol netlink.RouteProtocol = 66

// localSubnets lists the IPv4 addresses of this network namespace's
// interfaces that are up.
func localSubnets() ([]Subnet, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("routes: list addresses: %w", err)
	}
	up := map[int]bool{}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("routes: list links: %w", err)
	}
	for _, l := range links {
		up[l.Attrs().Index] = l.Attrs().Flags&net.FlagUp != 0
	}
	var out []Subnet
	for _, a := range addrs {
		if !up[a.LinkIndex] || a.IPNet == nil {
			continue
		}
		ip, ok := netip.AddrFromSlice(a.IP.To4())
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		out = append(out, Subnet{LinkIndex: a.LinkIndex, Prefix: netip.PrefixFrom(ip, ones)})
	}
	return out, nil
}

// ownRoutes lists the main table's IPv4 routes with Protocol.
func ownRoutes() ([]netlink.Route, error) {
	rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: Protocol, Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("routes: list routes: %w", err)
	}
	return rs, nil
}

// applyRoutes makes the main table's routes with Protocol exactly want:
// missing or different ones are replaced, others deleted. It returns what
// it changed, and every error it met.
func applyRoutes(want []Route) (added, removed []string, err error) {
	have, err := ownRoutes()
	if err != nil {
		return nil, nil, err
	}
	wanted := map[netip.Prefix]Route{}
	for _, r := range want {
		wanted[r.Dst] = r
	}
	var errs []error
	current := map[netip.Prefix]bool{}
	for _, h := range have {
		dst, ok := prefixOf(h.Dst)
		w, keep := wanted[dst]
		if ok && keep && h.LinkIndex == w.LinkIndex && h.Gw != nil && h.Gw.Equal(net.IP(w.Via.AsSlice())) {
			current[dst] = true
			continue
		}
		if ok && keep {
			continue // replaced below
		}
		if err := netlink.RouteDel(&h); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("routes: delete %s: %w", h.Dst, err))
			continue
		}
		removed = append(removed, fmt.Sprint(h.Dst))
	}
	for _, w := range want {
		if current[w.Dst] {
			continue
		}
		r := &netlink.Route{
			Dst:       &net.IPNet{IP: w.Dst.Addr().AsSlice(), Mask: net.CIDRMask(w.Dst.Bits(), 32)},
			Gw:        w.Via.AsSlice(),
			LinkIndex: w.LinkIndex,
			Protocol:  Protocol,
			Table:     unix.RT_TABLE_MAIN,
			Scope:     netlink.SCOPE_UNIVERSE,
		}
		if err := netlink.RouteReplace(r); err != nil {
			errs = append(errs, fmt.Errorf("routes: route %s via %s (node %s): %w", w.Dst, w.Via, w.Node, err))
			continue
		}
		added = append(added, fmt.Sprintf("%s via %s", w.Dst, w.Via))
	}
	return added, removed, errors.Join(errs...)
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(n.IP.To4())
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ip, ones), true
}
