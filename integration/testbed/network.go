package testbed

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"berth/internal/containerd"
)

// createBridge makes the underlay bridge in this namespace with addrs.
func createBridge(name string, addrs []netip.Prefix) error {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
	if err := netlink.LinkAdd(br); err != nil {
		return fmt.Errorf("testbed: bridge %s: %w", name, err)
	}
	for _, a := range addrs {
		if err := netlink.AddrAdd(br, &netlink.Addr{IPNet: ipNet(a)}); err != nil {
			return fmt.Errorf("testbed: bridge %s address %s: %w", name, a, err)
		}
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return fmt.Errorf("testbed: bridge %s up: %w", name, err)
	}
	return nil
}

// createNode makes the named network namespace of a node, wired to the
// bridge by a veth pair: hostEnd on the bridge, the node's end named
// nodeEnd with addr, and lo up. It returns the namespace's path.
func createNode(name, bridge, hostEnd, nodeEnd string, addr netip.Prefix) (string, error) {
	if err := containerd.EnsureNetnsMount(); err != nil {
		return "", err
	}
	path := filepath.Join(containerd.NetnsDir, name)
	if err := newNamedNetns(name); err != nil {
		return "", fmt.Errorf("testbed: netns %s: %w", name, err)
	}
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return path, err
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: hostEnd, MasterIndex: br.Attrs().Index}, PeerName: nodeEnd}
	if err := netlink.LinkAdd(veth); err != nil {
		return path, fmt.Errorf("testbed: veth %s: %w", hostEnd, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return path, err
	}
	peer, err := netlink.LinkByName(nodeEnd)
	if err != nil {
		return path, err
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return path, err
	}
	defer ns.Close()
	if err := netlink.LinkSetNsFd(peer, int(ns)); err != nil {
		return path, fmt.Errorf("testbed: move %s into %s: %w", nodeEnd, name, err)
	}
	return path, onOwnThread(path, func() error {
		for _, n := range []string{"lo", nodeEnd} {
			l, err := netlink.LinkByName(n)
			if err != nil {
				return err
			}
			if n == nodeEnd {
				if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: ipNet(addr)}); err != nil {
					return err
				}
			}
			if err := netlink.LinkSetUp(l); err != nil {
				return err
			}
		}
		return nil
	})
}

// SetConnected takes the node off the underlay (false: the host's end of
// its veth down, as a node whose network failed: its agent and pods run on
// but reach nothing beyond the node) or back on it (true).
func (n *Node) SetConnected(connected bool) error {
	l, err := netlink.LinkByName(n.HostLink)
	if err != nil {
		return fmt.Errorf("testbed: %s: %w", n.Name, err)
	}
	set := netlink.LinkSetDown
	if connected {
		set = netlink.LinkSetUp
	}
	if err := set(l); err != nil {
		return fmt.Errorf("testbed: %s: link %s: %w", n.Name, n.HostLink, err)
	}
	return nil
}

// routeVia routes dst via gw, a node's address on the bridge, in this
// namespace (the route goes with the bridge).
func routeVia(bridge string, dst netip.Prefix, gw netip.Addr) error {
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return fmt.Errorf("testbed: route %s via %s: %w", dst, gw, err)
	}
	r := &netlink.Route{LinkIndex: br.Attrs().Index, Dst: ipNet(dst), Gw: gw.AsSlice()}
	if err := netlink.RouteReplace(r); err != nil {
		return fmt.Errorf("testbed: route %s via %s: %w", dst, gw, err)
	}
	return nil
}

// onOwnThread runs f in the namespace at path on a goroutine of its own
// (inNetns) and waits for it.
func onOwnThread(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- inNetns(path, f) }()
	return <-errc
}

// newNamedNetns creates a network namespace bind-mounted at
// containerd.NetnsDir/name (as `ip netns add`).
func newNamedNetns(name string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread ends in the new namespace: never reused
		ns, err := netns.NewNamed(name)
		if err == nil {
			ns.Close()
		}
		errc <- err
	}()
	return <-errc
}

// deleteNetns removes the named namespace (its links go with it).
func deleteNetns(name string) error {
	if _, err := os.Stat(filepath.Join(containerd.NetnsDir, name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return netns.DeleteNamed(name)
}

// deleteLink removes a link of this namespace if it exists.
func deleteLink(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return err
	}
	return netlink.LinkDel(l)
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
