package multinode

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"berth/cni/routes"
	"berth/integration/testbed"
)

// podRoutes are the node's routes of berth's protocol, "DST via GW".
func podRoutes(t *testing.T, n *testbed.Node) []string {
	t.Helper()
	var out []string
	err := n.InNetns(func() error {
		rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routes.Protocol, Table: unix.RT_TABLE_MAIN},
			netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s via %s", r.Dst, r.Gw))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// waitRoutes waits until cond holds for every node's pod routes.
func waitRoutes(t *testing.T, bed *testbed.Bed, what string, cond func(n *testbed.Node, rs []string) bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for _, n := range bed.Nodes {
		for {
			rs := podRoutes(t, n)
			if cond(n, rs) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s has routes %v", what, n.Name, rs)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// fakeNode registers a Node with no agent behind it: a pod CIDR and an
// InternalIP, as a node joining would have.
func fakeNode(t *testing.T, bed *testbed.Bed, name, podCIDR, ip string) {
	t.Helper()
	ctx := context.Background()
	c := bed.Client
	n, err := c.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR},
			Taints: []v1.Taint{{Key: "example.com/no-agent", Effect: v1.TaintEffectNoSchedule}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}, {Type: v1.NodeHostName, Address: name}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestPodRoutesFollowNodes checks the host-gw routes: every node routes
// to each other node's pod CIDR via its underlay address; a Node that
// joins gets a route on every node, one that is deleted loses it, a route
// someone deletes comes back, and a Node off the segment gets no route but
// a Warning Event on every node saying what to do.
func TestPodRoutesFollowNodes(t *testing.T) {
	bed := testbed.Current(t)
	ctx := context.Background()
	cidrs := map[string]string{}
	for _, n := range bed.Nodes {
		node, err := bed.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cidrs[n.Name] = node.Spec.PodCIDR
	}
	peers := func(self *testbed.Node) []string {
		var want []string
		for _, n := range bed.Nodes {
			if n != self {
				want = append(want, fmt.Sprintf("%s via %s", cidrs[n.Name], n.IP))
			}
		}
		return want
	}
	has := func(rs []string, want ...string) bool {
		for _, w := range want {
			if !slices.Contains(rs, w) {
				return false
			}
		}
		return true
	}
	waitRoutes(t, bed, "routes to every peer", func(n *testbed.Node, rs []string) bool { return has(rs, peers(n)...) })

	const ghostRoute = "10.64.250.0/24 via 10.254.64.250"
	fakeNode(t, bed, "ghost", "10.64.250.0/24", "10.254.64.250")
	waitRoutes(t, bed, "a route to the joining node", func(_ *testbed.Node, rs []string) bool { return has(rs, ghostRoute) })

	// Someone deletes the route on the first node: it comes back.
	first := bed.Nodes[0]
	if err := first.InNetns(func() error {
		rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routes.Protocol}, netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if strings.HasPrefix(r.Dst.String(), "10.64.250.") {
				return netlink.RouteDel(&r)
			}
		}
		return fmt.Errorf("no route to 10.64.250.0/24")
	}); err != nil {
		t.Fatal(err)
	}
	waitRoutes(t, bed, "the deleted route re-asserted", func(_ *testbed.Node, rs []string) bool { return has(rs, ghostRoute) })

	if err := bed.Client.CoreV1().Nodes().Delete(ctx, "ghost", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRoutes(t, bed, "the deleted node's route gone", func(n *testbed.Node, rs []string) bool {
		return !slices.Contains(rs, ghostRoute) && has(rs, peers(n)...)
	})

	// A node off the segment (TEST-NET-1: nothing is ever sent there).
	fakeNode(t, bed, "far", "10.64.251.0/24", "192.0.2.7")
	for _, n := range bed.Nodes {
		sel := fields.Set{"involvedObject.kind": "Node", "involvedObject.name": n.Name, "reason": routes.EventNoRoute}.AsSelector().String()
		deadline := time.Now().Add(45 * time.Second)
		for {
			evs, err := bed.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				t.Fatal(err)
			}
			found := slices.ContainsFunc(evs.Items, func(e v1.Event) bool {
				return e.Type == v1.EventTypeWarning && strings.Contains(e.Message, "node far (InternalIP 192.0.2.7)") &&
					strings.Contains(e.Message, "encapsulating CNI")
			})
			if found {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s Warning Event about node far on %s: %+v", routes.EventNoRoute, n.Name, evs.Items)
			}
			time.Sleep(300 * time.Millisecond)
		}
		if rs := podRoutes(t, n); slices.ContainsFunc(rs, func(r string) bool { return strings.HasPrefix(r, "10.64.251.") }) {
			t.Errorf("%s routes to the node off the segment: %v", n.Name, rs)
		}
	}
}
