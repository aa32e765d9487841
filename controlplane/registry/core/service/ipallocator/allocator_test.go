package ipallocator_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/core/service/allocator"
	"berth/controlplane/registry/core/service/ipallocator"
	"berth/controlplane/registry/core/service/ipallocator/ipallocatortest"
)

func cidr(name string, cidrs ...string) networkingv1.ServiceCIDR {
	return networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}
}

func svc(name string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func TestRange(t *testing.T) {
	for _, tc := range []struct {
		prefix      string
		size, band  uint64
		first, last string
	}{
		{"10.0.0.0/24", 254, 16, "10.0.0.1", "10.0.0.254"},
		{"10.0.0.0/28", 14, 0, "10.0.0.1", "10.0.0.14"},
		{"10.0.0.0/16", 65534, 256, "10.0.0.1", "10.0.255.254"},
		{"fd00::/120", 255, 16, "fd00::1", "fd00::ff"},
	} {
		r := ipallocator.Range{Prefix: netip.MustParsePrefix(tc.prefix)}
		if r.Size() != tc.size || r.LowBand() != tc.band {
			t.Errorf("%s: size %d band %d, want %d %d", tc.prefix, r.Size(), r.LowBand(), tc.size, tc.band)
		}
		if first, last := r.At(0).String(), r.At(r.Size()-1).String(); first != tc.first || last != tc.last {
			t.Errorf("%s: %s..%s, want %s..%s", tc.prefix, first, last, tc.first, tc.last)
		}
		p := netip.MustParsePrefix(tc.prefix)
		if r.Contains(p.Addr()) || !r.Contains(r.At(0)) || !r.Contains(r.At(r.Size()-1)) || r.Contains(r.At(r.Size())) && p.Addr().Is4() {
			t.Errorf("%s: Contains wrong at the edges", tc.prefix)
		}
	}
}

func TestRangesMergeAndReadiness(t *testing.T) {
	notReady := cidr("b", "10.1.0.0/24")
	notReady.Status.Conditions = []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionFalse}}
	deleting := cidr("c", "10.0.0.0/24", "fd00::/64")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	rs := ipallocator.Ranges([]networkingv1.ServiceCIDR{cidr("a", "10.0.0.0/24"), notReady, deleting}, v1.IPv4Protocol)
	if len(rs) != 2 || rs[0].Prefix.String() != "10.0.0.0/24" || !rs[0].Ready || !slices.Equal(rs[0].CIDRs, []string{"a", "c"}) ||
		rs[1].Prefix.String() != "10.1.0.0/24" || rs[1].Ready {
		t.Fatalf("ranges %+v", rs)
	}
}

func TestAllocateCreatesIPAddresses(t *testing.T) {
	ctx := context.Background()
	st := ipallocatortest.New(cidr("kubernetes", "10.0.0.0/28"))
	a := ipallocator.New(st, v1.IPv4Protocol)
	got, err := a.Allocate(ctx, svc("web"), []string{"10.0.0.1"}, 1, false)
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	ip := st.Get("10.0.0.1")
	if ip == nil || ip.Spec.ParentRef.Resource != "services" || ip.Spec.ParentRef.Name != "web" || ip.Spec.ParentRef.Namespace != "ns" ||
		ip.Labels[networkingv1.LabelManagedBy] != ipallocator.ControllerName || ip.Labels[networkingv1.LabelIPAddressFamily] != "IPv4" {
		t.Fatalf("IPAddress %+v", ip)
	}
	if st.Get(got[0]) == nil {
		t.Fatalf("%s has no IPAddress", got[0])
	}
	// Taken, out of range, the network address: ItemErrors, nothing kept.
	for _, req := range []string{"10.0.0.1", "10.9.0.1", "10.0.0.0", "10.0.0.15"} {
		_, err := a.Allocate(ctx, svc("other"), []string{"10.0.0.5", req}, 0, false)
		var ie *allocator.ItemError
		if !errors.As(err, &ie) || ie.Item != req {
			t.Fatalf("%s: %v", req, err)
		}
		if st.Get("10.0.0.5") != nil {
			t.Fatalf("%s: 10.0.0.5 kept after the failure", req)
		}
	}
	_, err = a.Allocate(ctx, svc("other"), []string{"10.9.0.1"}, 0, false)
	if err.Error() != "the provided IP (10.9.0.1) is not in the valid range. The range of valid IPs is 10.0.0.0/28" || !errors.Is(err, allocator.ErrNotInRange) {
		t.Fatalf("not in range: %v", err)
	}
	if _, err := a.Allocate(ctx, svc("other"), []string{"10.0.0.1"}, 0, false); !errors.Is(err, allocator.ErrAllocated) {
		t.Fatalf("taken: %v", err)
	}
	// Dry run writes nothing.
	before := len(st.Names())
	if _, err := a.Allocate(ctx, svc("dry"), []string{"10.0.0.9"}, 2, true); err != nil || len(st.Names()) != before {
		t.Fatalf("dry run: %v, %d addresses", err, len(st.Names()))
	}
	// Release deletes; twice is fine.
	if err := a.Release(ctx, []string{"10.0.0.1", "10.0.0.1"}); err != nil || st.Get("10.0.0.1") != nil {
		t.Fatalf("release: %v", err)
	}
}

func TestAllocateFillsThenExtendsWithAnotherServiceCIDR(t *testing.T) {
	ctx := context.Background()
	st := ipallocatortest.New(cidr("kubernetes", "10.0.0.0/29")) // 6 addresses
	a := ipallocator.New(st, v1.IPv4Protocol)
	seen := map[string]bool{}
	for i := range 6 {
		got, err := a.Allocate(ctx, svc("s"), nil, 1, false)
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		seen[got[0]] = true
	}
	if len(seen) != 6 {
		t.Fatalf("%d distinct addresses", len(seen))
	}
	if _, err := a.Allocate(ctx, svc("s"), nil, 1, false); !errors.Is(err, allocator.ErrFull) {
		t.Fatalf("full: %v", err)
	}
	// A terminating ServiceCIDR allocates nothing.
	extra := cidr("extra", "10.1.0.0/30")
	extra.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	st.SetServiceCIDRs(cidr("kubernetes", "10.0.0.0/29"), extra)
	if _, err := a.Allocate(ctx, svc("s"), nil, 1, false); !errors.Is(err, allocator.ErrFull) {
		t.Fatalf("terminating: %v", err)
	}
	st.SetServiceCIDRs(cidr("kubernetes", "10.0.0.0/29"), cidr("extra", "10.1.0.0/30"))
	got, err := a.Allocate(ctx, svc("s"), nil, 2, false)
	if err != nil || !slices.Equal(sorted(got), []string{"10.1.0.1", "10.1.0.2"}) {
		t.Fatalf("extended: %v %v", got, err)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestPlanRepair(t *testing.T) {
	now := time.Now()
	old := metav1.Time{Time: now.Add(-2 * ipallocator.OrphanGrace)}
	web, db, dup := svc("web"), svc("db"), svc("dup")
	ipOf := func(name string, owner *v1.Service, created metav1.Time) networkingv1.IPAddress {
		ip := *ipallocator.NewIPAddress(name, owner)
		ip.CreationTimestamp = created
		return ip
	}
	foreign := ipOf("10.0.0.9", web, old)
	foreign.Labels = nil // not this allocator's: left alone
	wrong := ipOf("10.0.0.3", svc("gone"), old)
	ips := []networkingv1.IPAddress{
		ipOf("10.0.0.1", web, old),
		wrong,
		ipOf("10.0.0.7", svc("gone"), old), // leaked
		ipOf("10.0.0.8", svc("gone"), metav1.Time{Time: now}), // too young to call leaked
		foreign,
	}
	uses := []ipallocator.Use{{Service: web, IP: "10.0.0.1"}, {Service: db, IP: "10.0.0.2"}, {Service: db, IP: "10.0.0.3"},
		{Service: dup, IP: "10.0.0.1"}, {Service: db, IP: "192.168.0.1"}}
	plan, findings := ipallocator.PlanRepair(uses, ips, []networkingv1.ServiceCIDR{cidr("kubernetes", "10.0.0.0/24")}, now, ipallocator.OrphanGrace)
	var creates []string
	for _, c := range plan.Create {
		creates = append(creates, c.Name+"@"+c.Spec.ParentRef.Name)
	}
	if !slices.Equal(creates, []string{"10.0.0.2@db", "10.0.0.3@db"}) || !slices.Equal(plan.Delete, []string{"10.0.0.3", "10.0.0.7"}) {
		t.Fatalf("plan: create %v delete %v", creates, plan.Delete)
	}
	var kinds []string
	for _, f := range findings {
		kinds = append(kinds, f.Kind+" "+f.Item)
	}
	want := []string{"Duplicate 10.0.0.1", "Repaired 10.0.0.2", "WrongReference 10.0.0.3", "OutOfRange 192.168.0.1", "Leaked 10.0.0.7"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("findings %v, want %v", kinds, want)
	}
}

func TestRepairerWrites(t *testing.T) {
	ctx := context.Background()
	st := ipallocatortest.New(cidr("kubernetes", "10.0.0.0/24"))
	r := ipallocator.NewRepairer(st, func(context.Context) ([]ipallocator.Use, error) {
		return []ipallocator.Use{{Service: svc("web"), IP: "10.0.0.4"}}, nil
	}, nil)
	if _, err := r.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if ip := st.Get("10.0.0.4"); ip == nil || ip.Spec.ParentRef.Name != "web" {
		t.Fatalf("not repaired: %+v", ip)
	}
}
