package routes

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/knftables"

	"berth/internal/prereq"
)

// inNewNetns runs f on a locked thread in a fresh network namespace with a
// dummy "underlay" link at 10.254.64.11/24, and returns to the original
// namespace after.
func inNewNetns(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root for a network namespace")
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			t.Fatal(err)
		}
		ns.Close()
	}()
	// A veth pair (the kernel may lack the dummy driver), both ends up.
	dummy := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "underlay"}, PeerName: "underlay-peer"}
	if err := netlink.LinkAdd(dummy); err != nil {
		t.Fatal(err)
	}
	peer, err := netlink.LinkByName("underlay-peer")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(peer); err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr("10.254.64.11/24")
	if err := netlink.AddrAdd(dummy, addr); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(dummy); err != nil {
		t.Fatal(err)
	}
	f()
}

func ownDsts(t *testing.T) []string {
	t.Helper()
	rs, err := ownRoutes()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, r.Dst.String()+" via "+r.Gw.String())
	}
	return out
}

// TestApplyAddsReplacesAndRemoves applies plans in a network namespace: the
// routes appear with Protocol, a changed gateway is replaced, a deleted
// route comes back on the next apply, a peer gone loses its route, and a
// route of another protocol is never touched.
func TestApplyAddsReplacesAndRemoves(t *testing.T) {
	inNewNetns(t, func() {
		nodes := []*v1.Node{node("a", "10.64.1.0/24", "10.254.64.11"), node("b", "10.64.2.0/24", "10.254.64.12"), node("c", "10.64.3.0/24", "10.254.64.13")}
		apply := func(nodes []*v1.Node) {
			t.Helper()
			local, err := localSubnets()
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := applyRoutes(Compute("a", nodes, local).Routes); err != nil {
				t.Fatal(err)
			}
		}
		// A route someone else owns, to a range no node has.
		link, err := netlink.LinkByName("underlay")
		if err != nil {
			t.Fatal(err)
		}
		_, foreign, _ := net.ParseCIDR("10.99.0.0/16")
		if err := netlink.RouteAdd(&netlink.Route{Dst: foreign, Gw: net.ParseIP("10.254.64.99"), LinkIndex: link.Attrs().Index}); err != nil {
			t.Fatal(err)
		}

		apply(nodes)
		if got, want := strings.Join(ownDsts(t), ","), "10.64.2.0/24 via 10.254.64.12,10.64.3.0/24 via 10.254.64.13"; got != want {
			t.Fatalf("routes %s, want %s", got, want)
		}
		nodes[2] = node("c", "10.64.3.0/24", "10.254.64.23") // c moved
		rs, _ := ownRoutes()
		if err := netlink.RouteDel(&rs[0]); err != nil { // someone deletes b's
			t.Fatal(err)
		}
		apply(nodes)
		if got, want := strings.Join(ownDsts(t), ","), "10.64.2.0/24 via 10.254.64.12,10.64.3.0/24 via 10.254.64.23"; got != want {
			t.Fatalf("after the change: routes %s, want %s", got, want)
		}
		apply(nodes[:2]) // c removed
		if got, want := strings.Join(ownDsts(t), ","), "10.64.2.0/24 via 10.254.64.12"; got != want {
			t.Fatalf("after c left: routes %s, want %s", got, want)
		}
		all, err := netlink.RouteList(nil, netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range all {
			found = found || (r.Dst != nil && r.Dst.String() == "10.99.0.0/16")
		}
		if !found {
			t.Error("the foreign route 10.99.0.0/16 was removed")
		}
	})
}

// TestMasqueradeTable writes the egress table in a network namespace: the
// set holds the pod ranges and the rule masquerades only what leaves them.
func TestMasqueradeTable(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		prereq.Missing(t, "needs the nft binary")
		return
	}
	inNewNetns(t, func() {
		nft, err := knftables.New(knftables.IPv4Family, "berth-egress-test")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		ranges := []netip.Prefix{p("10.64.1.0/24"), p("10.64.2.0/24")}
		for range 2 { // idempotent
			if err := syncMasquerade(ctx, nft, ranges); err != nil {
				t.Fatal(err)
			}
		}
		out, err := exec.Command("nft", "list", "table", "ip", "berth-egress-test").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list: %v\n%s", err, out)
		}
		for _, want := range []string{"10.64.1.0/24", "10.64.2.0/24", "ip saddr @pod-ranges ip daddr != @pod-ranges masquerade"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		if strings.Count(string(out), "daddr != @pod-ranges masquerade") != 1 {
			t.Errorf("the rule is there more than once:\n%s", out)
		}
		if err := deleteTable(ctx, nft); err != nil {
			t.Fatal(err)
		}
	})
}
