package allocator

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	"berth/controlplane/storage"
	"berth/internal/api/scheme"
)

func TestBitmap(t *testing.T) {
	b := NewBitmap(10, nil)
	if !b.Set(3) || b.Set(3) || !b.Has(3) || b.Has(4) || b.Count() != 1 {
		t.Fatal("set/has")
	}
	b.Set(9)
	c := NewBitmap(10, b.Data())
	if !slices.Equal(c.Offsets(), []int{3, 9}) {
		t.Fatalf("round trip: %v", c.Offsets())
	}
	c.Clear(9)
	c.Clear(3)
	if len(c.Data()) != 0 {
		t.Fatalf("empty bitmap stores %v", c.Data())
	}
	// Bits past the size are dropped.
	if d := NewBitmap(3, []byte{0xff}); d.Count() != 3 {
		t.Fatalf("count %d", d.Count())
	}
}

func TestBitmapNextPrefersUpperBand(t *testing.T) {
	b := NewBitmap(8, nil)
	var got []int
	for range 8 {
		off, ok := b.Next(0, 4)
		if !ok {
			t.Fatal("full too early")
		}
		b.Set(off)
		got = append(got, off)
	}
	if !slices.Equal(got, []int{4, 5, 6, 7, 0, 1, 2, 3}) {
		t.Fatalf("order %v", got)
	}
	if _, ok := b.Next(5, 4); ok {
		t.Fatal("a full bitmap had a free offset")
	}
}

func TestIPRange(t *testing.T) {
	r, err := ParseIPRange("10.43.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	if r.Size() != 65534 || r.LowBand() != 256 || r.First().String() != "10.43.0.1" {
		t.Fatalf("size %d band %d first %s", r.Size(), r.LowBand(), r.First())
	}
	if off, err := r.Offset("10.43.1.0"); err != nil || off != 255 || r.Item(255) != "10.43.1.0" {
		t.Fatalf("offset %d %v", off, err)
	}
	for _, bad := range []string{"10.43.0.0", "10.43.255.255", "10.44.0.1", "nonsense", "fd00::1"} {
		_, err := r.Offset(bad)
		if !errors.Is(err, ErrNotInRange) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	_, err = r.Offset("10.44.0.1")
	if err.Error() != "the provided IP (10.44.0.1) is not in the valid range. The range of valid IPs is 10.43.0.0/16" {
		t.Fatalf("wording: %v", err)
	}
	r6, err := ParseIPRange("fd00:43::/112")
	if err != nil || r6.Size() != 65535 || r6.Item(0) != "fd00:43::1" {
		t.Fatalf("v6: %v", err)
	}
	if off, err := r6.Offset("fd00:43::ff"); err != nil || off != 254 {
		t.Fatalf("v6 offset %d %v", off, err)
	}
	for _, bad := range []string{"10.0.0.0/8", "10.43.0.1/16", "10.43.0.0/31", "fd00::/64", "x"} {
		if _, err := ParseIPRange(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestPortRange(t *testing.T) {
	r, err := ParsePortRange(DefaultNodePortRange)
	if err != nil || r.Size() != 2768 || r.LowBand() != 86 || r.String() != "30000-32767" {
		t.Fatalf("%v %d %d", err, r.Size(), r.LowBand())
	}
	if _, err := r.Offset("80"); err == nil || err.Error() != "provided port is not in the valid range. The range of valid ports is 30000-32767" {
		t.Fatalf("wording: %v", err)
	}
	for _, bad := range []string{"3-1", "0-10", "1-70000", "a-b"} {
		if _, err := ParsePortRange(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestPlanRepair(t *testing.T) {
	r, _ := ParsePortRange("100-109")
	stored := NewBitmap(10, nil)
	stored.Set(0) // 100: held by a
	stored.Set(5) // 105: held by nobody (a crash after allocating)
	uses := []Use{{"ns/a", "100"}, {"ns/b", "101"}, {"ns/c", "102"}, {"ns/d", "102"}, {"ns/e", "200"}}
	leaks := map[int]int{}
	var findings []Finding
	var next *Bitmap
	for i := 1; i <= LeakRepairs; i++ {
		next, findings = PlanRepair(r, stored, uses, leaks)
		if i < LeakRepairs && !next.Has(5) {
			t.Fatalf("repair %d freed a leak early", i)
		}
		stored = next
	}
	if !slices.Equal(next.Offsets(), []int{0, 1, 2}) {
		t.Fatalf("bitmap %v", next.Offsets())
	}
	kinds := map[string]Finding{}
	for _, f := range findings {
		kinds[f.Kind] = f
	}
	if f := kinds[FindingLeaked]; f.Item != "105" {
		t.Errorf("leak: %+v", findings)
	}
	if f := kinds[FindingDuplicate]; f.Item != "102" || len(f.Services) != 2 {
		t.Errorf("duplicate: %+v", findings)
	}
	if f := kinds[FindingOutOfRange]; f.Item != "200" {
		t.Errorf("out of range: %+v", findings)
	}
	// The first repair also reported 101 and 102 missing from the bitmap.
	fresh := NewBitmap(10, nil)
	fresh.Set(0)
	_, first := PlanRepair(r, fresh, uses, map[int]int{})
	n := 0
	for _, f := range first {
		if f.Kind == FindingRepaired {
			n++
		}
	}
	if n != 2 {
		t.Errorf("repaired findings %+v", first)
	}
	// A leak released meanwhile is forgotten.
	leaks = map[int]int{7: 2}
	PlanRepair(r, NewBitmap(10, nil), nil, leaks)
	if len(leaks) != 0 {
		t.Errorf("stale leak kept: %v", leaks)
	}
}

// newEtcdAllocator is an allocator on a real etcd.
func newEtcdAllocator(t *testing.T, r Range, key string) *Allocator {
	t.Helper()
	client := testserver.RunEtcd(t, nil)
	f, err := storage.New(storage.Config{Client: client, Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	newRA := func() runtime.Object { return &corev1.RangeAllocation{} }
	st, closeFn, err := f.Raw(schema.GroupResource{Resource: "rangeallocations"}, "/ranges",
		newRA, newRA)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return New(r, st, key)
}

func TestAllocatorOnEtcd(t *testing.T) {
	ctx := context.Background()
	r, _ := ParseIPRange("10.43.0.0/28") // 14 addresses, no low band
	a := newEtcdAllocator(t, r, ServiceIPsKey)

	if _, err := a.Allocate(ctx, []string{"10.43.0.1"}, 0, false); err != nil {
		t.Fatal(err)
	}
	_, err := a.Allocate(ctx, []string{"10.43.0.5", "10.43.0.1"}, 1, false)
	var ie *ItemError
	if !errors.As(err, &ie) || ie.Item != "10.43.0.1" || !errors.Is(err, ErrAllocated) || err.Error() != "provided IP is already allocated" {
		t.Fatalf("taken: %v", err)
	}
	if has, _ := a.Has(ctx, "10.43.0.5"); has {
		t.Fatal("a failed allocation took an item")
	}
	if _, err := a.Allocate(ctx, []string{"10.43.1.1"}, 0, false); !errors.Is(err, ErrNotInRange) {
		t.Fatalf("out of range: %v", err)
	}
	// Dry run: checked, not taken.
	if got, err := a.Allocate(ctx, []string{"10.43.0.9"}, 1, true); err != nil || len(got) != 1 {
		t.Fatalf("dry run %v %v", got, err)
	}
	if has, _ := a.Has(ctx, "10.43.0.9"); has {
		t.Fatal("dry run took an item")
	}

	// Concurrent allocations (two servers' worth) never share an item.
	var mu sync.Mutex
	seen := map[string]bool{"10.43.0.1": true}
	var wg sync.WaitGroup
	for range 13 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := a.Allocate(ctx, nil, 1, false)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[got[0]] {
				t.Errorf("%s handed out twice", got[0])
			}
			seen[got[0]] = true
		}()
	}
	wg.Wait()
	if _, err := a.Allocate(ctx, nil, 1, false); !errors.Is(err, ErrFull) {
		t.Fatalf("full range: %v", err)
	}
	if err := a.Release(ctx, []string{"10.43.0.7"}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Allocate(ctx, nil, 1, false); err != nil || got[0] != "10.43.0.7" {
		t.Fatalf("after release: %v %v", got, err)
	}

	// Another range configured on the same key: allocation refuses until
	// the repair rebuilds it.
	r2, _ := ParseIPRange("10.44.0.0/28")
	b := New(r2, a.store, ServiceIPsKey)
	if _, err := b.Allocate(ctx, nil, 1, false); !errors.Is(err, ErrRangeMismatch) {
		t.Fatalf("mismatch: %v", err)
	}
	rep := NewRepairer(b, func(context.Context) ([]Use, error) { return []Use{{"default/kubernetes", "10.44.0.1"}}, nil }, nil)
	if _, err := rep.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Allocate(ctx, []string{"10.44.0.2"}, 0, false); err != nil || len(got) != 0 {
		t.Fatalf("after rebuild: %v", err)
	}
	if has, _ := b.Has(ctx, "10.44.0.1"); !has {
		t.Fatal("rebuild lost the service's IP")
	}
}

// TestRepairAfterCrash: an allocation whose Service was never written (a
// crash in between) is freed after LeakRepairs repairs; a Service whose IP
// the bitmap lost gets it back; a write between the repair's read and its
// write makes it retry rather than undo the allocation.
func TestRepairAfterCrash(t *testing.T) {
	ctx := context.Background()
	r, _ := ParseIPRange("10.43.0.0/24")
	a := newEtcdAllocator(t, r, ServiceIPsKey)
	leaked, err := a.Allocate(ctx, nil, 1, false) // the crashed create
	if err != nil {
		t.Fatal(err)
	}
	services := []Use{{"default/kubernetes", "10.43.0.1"}, {"ns/web", "10.43.0.20"}} // stored, never in the bitmap
	var racing bool
	list := func(context.Context) ([]Use, error) {
		if racing {
			// Another server allocates between the repair's read and write.
			racing = false
			if _, err := a.Allocate(ctx, []string{"10.43.0.30"}, 0, false); err != nil {
				t.Error(err)
			}
		}
		return services, nil
	}
	rep := NewRepairer(a, list, nil)
	var reported []Finding
	rep.Report = func(f Finding) { reported = append(reported, f) }
	for i := 1; i <= LeakRepairs; i++ {
		racing = i == 2
		if _, err := rep.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		has, _ := a.Has(ctx, leaked[0])
		if i < LeakRepairs && !has {
			t.Fatalf("repair %d freed %s early", i, leaked[0])
		}
		if i == LeakRepairs && has {
			t.Fatalf("leaked %s still allocated", leaked[0])
		}
	}
	for _, ip := range []string{"10.43.0.1", "10.43.0.20"} {
		if has, _ := a.Has(ctx, ip); !has {
			t.Errorf("%s not repaired", ip)
		}
	}
	// 10.43.0.30 was allocated while a repair ran: still held (a leak of
	// its own now, freed only after LeakRepairs repairs from its first).
	if has, _ := a.Has(ctx, "10.43.0.30"); !has {
		t.Error("the repair undid a concurrent allocation")
	}
	kinds := map[string]int{}
	for _, f := range reported {
		kinds[f.Kind]++
	}
	if kinds[FindingRepaired] != 2 || kinds[FindingLeaked] != 1 {
		t.Errorf("findings %+v", reported)
	}
	if err := a.Replace(ctx, NewBitmap(r.Size(), nil), "1"); !apierrors.IsConflict(err) {
		t.Errorf("stale replace: %v", err)
	}
}

// TestTwoServers: allocators of two servers on one key never hand out one
// item twice, though each starts from the bitmap it last wrote.
func TestTwoServers(t *testing.T) {
	ctx := context.Background()
	r, _ := ParsePortRange("30000-30009")
	a := newEtcdAllocator(t, r, ServiceNodePortsKey)
	b := New(r, a.store, ServiceNodePortsKey)
	if _, err := a.Allocate(ctx, []string{"30000"}, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Allocate(ctx, []string{"30001"}, 0, false); err != nil {
		t.Fatal(err)
	}
	// a's last bitmap lacks 30001: its swap fails, it re-reads, refuses.
	if _, err := a.Allocate(ctx, []string{"30001"}, 0, false); !errors.Is(err, ErrAllocated) {
		t.Fatalf("a took b's port: %v", err)
	}
	seen := map[string]bool{"30000": true, "30001": true}
	for i := range 8 {
		al := a
		if i%2 == 1 {
			al = b
		}
		got, err := al.Allocate(ctx, nil, 1, false)
		if err != nil || seen[got[0]] {
			t.Fatalf("allocation %d: %v %v", i, got, err)
		}
		seen[got[0]] = true
	}
	if err := b.Release(ctx, []string{"30000"}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Allocate(ctx, nil, 1, false); err != nil || got[0] != "30000" {
		t.Fatalf("after b released 30000, a got %v %v", got, err)
	}
}
