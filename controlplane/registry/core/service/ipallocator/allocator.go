package ipallocator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"berth/controlplane/registry/core/service/allocator"
)

type notInRangeError string

func (e notInRangeError) Error() string        { return string(e) }
func (e notInRangeError) Is(target error) bool { return target == allocator.ErrNotInRange }

// Store is what the allocator reads and writes: the IPAddresses and the
// ServiceCIDRs (in berth server, their registry stores).
type Store interface {
	// CreateIPAddress creates ip; an AlreadyExists error when the address
	// is taken.
	CreateIPAddress(ctx context.Context, ip *networkingv1.IPAddress) error
	// IPAddressExists reports whether the address is taken.
	IPAddressExists(ctx context.Context, name string) (bool, error)
	// DeleteIPAddress deletes an address (NotFound when it is not taken).
	DeleteIPAddress(ctx context.Context, name string) error
	// ListIPAddresses lists every IPAddress.
	ListIPAddresses(ctx context.Context) ([]networkingv1.IPAddress, error)
	// ListServiceCIDRs lists every ServiceCIDR.
	ListServiceCIDRs(ctx context.Context) ([]networkingv1.ServiceCIDR, error)
}

// Allocator allocates the cluster IPs of one family. Safe for concurrent
// use (the store arbitrates: an address has one IPAddress).
type Allocator struct {
	store  Store
	family v1.IPFamily
}

// New is an allocator of family's cluster IPs over store.
func New(store Store, family v1.IPFamily) *Allocator {
	return &Allocator{store: store, family: family}
}

// Family is the family the allocator serves.
func (a *Allocator) Family() v1.IPFamily { return a.family }

// randomProbes is how many random addresses dynamic allocation tries
// before it lists the taken ones and scans.
const randomProbes = 8

// Allocate takes the requested IPs and n more of the allocator's choice
// (returned) for svc; on error nothing is taken. A requested IP that is
// taken or in no ready ServiceCIDR fails with an *allocator.ItemError
// wrapping allocator.ErrIPAllocated or allocator.ErrNotInRange; no free
// address left: allocator.ErrFull. With dryRun nothing is written.
func (a *Allocator) Allocate(ctx context.Context, svc *v1.Service, requested []string, n int, dryRun bool) ([]string, error) {
	cidrs, err := a.store.ListServiceCIDRs(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing service CIDRs: %w", err)
	}
	ranges := Ranges(cidrs, a.family)
	var taken []string
	undo := func() {
		if !dryRun {
			_ = a.Release(context.WithoutCancel(ctx), taken)
		}
	}
	for _, ip := range requested {
		if err := a.take(ctx, svc, ranges, ip, dryRun); err != nil {
			undo()
			return nil, err
		}
		taken = append(taken, ip)
	}
	var picked []string
	for range n {
		ip, err := a.next(ctx, svc, ranges, dryRun, picked)
		if err != nil {
			undo()
			return nil, err
		}
		taken = append(taken, ip)
		picked = append(picked, ip)
	}
	return picked, nil
}

// take takes one requested address.
func (a *Allocator) take(ctx context.Context, svc *v1.Service, ranges []Range, ip string, dryRun bool) error {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return &allocator.ItemError{Item: ip, Err: notInRange(ip, ranges)}
	}
	if _, ok := containing(ranges, addr, true); !ok {
		return &allocator.ItemError{Item: ip, Err: notInRange(ip, ranges)}
	}
	name := addr.Unmap().String()
	if dryRun {
		exists, err := a.store.IPAddressExists(ctx, name)
		if err != nil {
			return err
		}
		if exists {
			return &allocator.ItemError{Item: ip, Err: allocator.ErrIPAllocated}
		}
		return nil
	}
	err = a.store.CreateIPAddress(ctx, NewIPAddress(name, svc))
	if apierrors.IsAlreadyExists(err) {
		return &allocator.ItemError{Item: ip, Err: allocator.ErrIPAllocated}
	}
	return err
}

// next takes a free address of a ready range: random ones of the upper
// band first, then, listing what is taken, the first free one from a
// random start (upper band, then the low band).
func (a *Allocator) next(ctx context.Context, svc *v1.Service, ranges []Range, dryRun bool, exclude []string) (string, error) {
	var ready []Range
	for _, r := range ranges {
		if r.Ready {
			ready = append(ready, r)
		}
	}
	if len(ready) == 0 {
		return "", fmt.Errorf("no ready ServiceCIDR of family %s: %w", a.family, allocator.ErrFull)
	}
	try := func(ip string) (bool, error) {
		for _, x := range exclude {
			if x == ip {
				return false, nil
			}
		}
		if dryRun {
			exists, err := a.store.IPAddressExists(ctx, ip)
			return !exists, err
		}
		err := a.store.CreateIPAddress(ctx, NewIPAddress(ip, svc))
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return err == nil, err
	}
	for range randomProbes {
		r := ready[rand.IntN(len(ready))]
		band := r.LowBand()
		if r.Size() <= band {
			break
		}
		ip := r.At(band + rand.Uint64N(r.Size()-band)).String()
		if ok, err := try(ip); ok || err != nil {
			return ip, err
		}
	}
	for attempt := 0; attempt < 3; attempt++ {
		list, err := a.store.ListIPAddresses(ctx)
		if err != nil {
			return "", fmt.Errorf("listing IP addresses: %w", err)
		}
		used := make(map[netip.Addr]bool, len(list))
		for _, ip := range list {
			if addr, err := netip.ParseAddr(ip.Name); err == nil {
				used[addr.Unmap()] = true
			}
		}
		ip, found := scan(ready, used)
		if !found {
			return "", allocator.ErrFull
		}
		if ok, err := try(ip); ok || err != nil {
			return ip, err
		}
	}
	return "", errors.New("allocating a cluster IP: every free address found was taken meanwhile")
}

// maxScan bounds the addresses one scan looks at per range (IPv6 ranges
// are vast; a random probe finds a free one there).
const maxScan = 1 << 20

// scan finds a free address in ranges: in each, from a random offset of
// the upper band to its end and round, then the low band.
func scan(ranges []Range, used map[netip.Addr]bool) (string, bool) {
	for _, r := range ranges {
		size, band := r.Size(), r.LowBand()
		upper := size - band
		if upper > 0 {
			start := rand.Uint64N(upper)
			for i := uint64(0); i < min(upper, maxScan); i++ {
				if a := r.At(band + (start+i)%upper); !used[a] {
					return a.String(), true
				}
			}
		}
		for off := uint64(0); off < band; off++ {
			if a := r.At(off); !used[a] {
				return a.String(), true
			}
		}
	}
	return "", false
}

// Release gives addresses back (deletes their IPAddresses); ones already
// gone are fine.
func (a *Allocator) Release(ctx context.Context, ips []string) error {
	var errs []error
	for _, ip := range ips {
		name := ip
		if addr, err := netip.ParseAddr(ip); err == nil {
			name = addr.Unmap().String()
		}
		if err := a.store.DeleteIPAddress(ctx, name); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
