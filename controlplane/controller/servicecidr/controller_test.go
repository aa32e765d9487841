package servicecidr

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/core/service/ipallocator"
)

func TestDecide(t *testing.T) {
	now := time.Now()
	sc := func(name string, deleted time.Duration, cidrs ...string) *networkingv1.ServiceCIDR {
		c := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{Finalizer}},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}
		if deleted > 0 {
			c.DeletionTimestamp = &metav1.Time{Time: now.Add(-deleted)}
		}
		return c
	}
	ip := func(addr string) *networkingv1.IPAddress {
		return ipallocator.NewIPAddress(addr, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}})
	}
	foreign := ip("10.1.0.5")
	foreign.Labels = nil
	fresh := sc("new", 0, "10.1.0.0/24")
	fresh.Finalizers = nil
	for _, tc := range []struct {
		name  string
		c     *networkingv1.ServiceCIDR
		all   []*networkingv1.ServiceCIDR
		ips   []*networkingv1.IPAddress
		check func(Decision) bool
	}{
		{"new: finalizer and Ready", fresh, nil, nil, func(d Decision) bool {
			return d.AddFinalizer && d.Ready.Status == metav1.ConditionTrue && d.Ready.Message == readyMessage
		}},
		{"deleting, an address only it holds: Terminating", sc("x", time.Minute, "10.1.0.0/24"), nil, []*networkingv1.IPAddress{ip("10.1.0.5")},
			func(d Decision) bool {
				return !d.RemoveFinalizer && d.Ready.Status == metav1.ConditionFalse && d.Ready.Reason == networkingv1.ServiceCIDRReasonTerminating
			}},
		{"deleting, the address also in another", sc("x", time.Minute, "10.1.0.0/24"), []*networkingv1.ServiceCIDR{sc("big", 0, "10.0.0.0/8")},
			[]*networkingv1.IPAddress{ip("10.1.0.5")}, func(d Decision) bool { return d.RemoveFinalizer }},
		{"deleting, only another allocator's address", sc("x", time.Minute, "10.1.0.0/24"), nil, []*networkingv1.IPAddress{foreign},
			func(d Decision) bool { return d.RemoveFinalizer }},
		{"deleting, unused, within the grace", sc("x", time.Second, "10.1.0.0/24"), nil, nil,
			func(d Decision) bool { return !d.RemoveFinalizer && d.After > 0 && d.After <= DeletionGrace }},
		{"deleting, an address in the other family", sc("x", time.Minute, "10.1.0.0/24", "fd00::/120"), nil, []*networkingv1.IPAddress{ip("fd00::7")},
			func(d Decision) bool { return !d.RemoveFinalizer && d.Ready != nil }},
	} {
		all := append([]*networkingv1.ServiceCIDR{tc.c}, tc.all...)
		if d := Decide(tc.c, all, tc.ips, now); !tc.check(d) {
			t.Errorf("%s: %+v", tc.name, d)
		}
	}
}
