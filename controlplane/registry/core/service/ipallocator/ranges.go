// Package ipallocator gives Services their cluster IPs from the
// networking.k8s.io/v1 ServiceCIDRs, one IPAddress object per allocated IP
// (named by the address, its parentRef the Service), as kube-apiserver's
// allocator since 1.33: an IP is taken by creating its IPAddress (the
// store's create is the compare-and-swap: a second create of one address
// fails AlreadyExists) and given back by deleting it. Extra ServiceCIDRs
// extend the range; a ServiceCIDR being deleted allocates no more. The
// repair (PlanRepair, pure) reconciles the IPAddresses with the Services.
package ipallocator

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerName is the managed-by label value of the IPAddresses this
// allocator creates, as upstream's.
const ControllerName = "ipallocator.k8s.io"

// Range is the usable addresses of one CIDR: all but the network address
// and, for IPv4, the broadcast address.
type Range struct {
	Prefix netip.Prefix
	// CIDRs are the names of the ServiceCIDRs holding this prefix.
	CIDRs []string
	// Ready: at least one of them is ready and not being deleted, so the
	// range allocates.
	Ready bool
}

// Family is the range's IP family.
func (r Range) Family() v1.IPFamily { return familyOf(r.Prefix.Addr()) }

// Size is the number of usable addresses (capped at MaxInt64).
func (r Range) Size() uint64 {
	host := r.Prefix.Addr().BitLen() - r.Prefix.Bits()
	if host >= 63 {
		return math.MaxInt64
	}
	n := uint64(1)<<host - 1 // not the network address
	if r.Prefix.Addr().Is4() && n > 0 {
		n-- // nor the broadcast address
	}
	return n
}

// At is the usable address at offset (0 is the one after the network
// address).
func (r Range) At(offset uint64) netip.Addr {
	b := r.Prefix.Masked().Addr().As16()
	lo := binary.BigEndian.Uint64(b[8:])
	sum := lo + offset + 1
	if sum < lo { // carry into the upper half
		hi := binary.BigEndian.Uint64(b[:8]) + 1
		binary.BigEndian.PutUint64(b[:8], hi)
	}
	binary.BigEndian.PutUint64(b[8:], sum)
	a := netip.AddrFrom16(b)
	if r.Prefix.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}

// Contains reports whether a is a usable address of the range.
func (r Range) Contains(a netip.Addr) bool {
	a = a.Unmap()
	if !r.Prefix.Contains(a) || a == r.Prefix.Masked().Addr() {
		return false
	}
	if r.Prefix.Addr().Is4() && r.Prefix.Bits() < 32 {
		return a != broadcast(r.Prefix)
	}
	return true
}

// LowBand is how many of the first addresses dynamic allocation leaves
// for requested ones until the rest is full: min(max(16, size/16), 256),
// none below 16 addresses, as upstream.
func (r Range) LowBand() uint64 {
	size := r.Size()
	if size+2 <= 16 {
		return 0
	}
	return min(max(16, (size+2)/16), 256)
}

func broadcast(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) | (1<<(32-p.Bits()) - 1)
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

func familyOf(a netip.Addr) v1.IPFamily {
	if a.Unmap().Is4() {
		return v1.IPv4Protocol
	}
	return v1.IPv6Protocol
}

// IsReady reports a ServiceCIDR's Ready condition; one without the
// condition counts as ready (no controller may be running), as upstream.
func IsReady(c *networkingv1.ServiceCIDR) bool {
	if cond := meta.FindStatusCondition(c.Status.Conditions, networkingv1.ServiceCIDRConditionReady); cond != nil {
		return cond.Status == metav1.ConditionTrue
	}
	return true
}

// Ranges are the ranges of family the ServiceCIDRs define, one per
// distinct prefix, ordered by prefix.
func Ranges(cidrs []networkingv1.ServiceCIDR, family v1.IPFamily) []Range {
	byPrefix := map[netip.Prefix]*Range{}
	for i := range cidrs {
		c := &cidrs[i]
		ready := IsReady(c) && c.DeletionTimestamp == nil
		for _, s := range c.Spec.CIDRs {
			p, err := netip.ParsePrefix(s)
			if err != nil || familyOf(p.Addr()) != family {
				continue
			}
			p = p.Masked()
			r, ok := byPrefix[p]
			if !ok {
				r = &Range{Prefix: p}
				byPrefix[p] = r
			}
			r.CIDRs = append(r.CIDRs, c.Name)
			r.Ready = r.Ready || ready
		}
	}
	out := make([]Range, 0, len(byPrefix))
	for _, r := range byPrefix {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Range) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits())
	})
	return out
}

// containing is the first range holding a (ready ones only when ready).
func containing(ranges []Range, a netip.Addr, ready bool) (Range, bool) {
	for _, r := range ranges {
		if r.Contains(a) && (r.Ready || !ready) {
			return r, true
		}
	}
	return Range{}, false
}

// NewIPAddress is the IPAddress object recording that svc holds ip.
func NewIPAddress(ip string, svc *v1.Service) *networkingv1.IPAddress {
	fam := v1.IPv4Protocol
	if a, err := netip.ParseAddr(ip); err == nil {
		fam = familyOf(a)
	}
	return &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: ip, Labels: map[string]string{
			networkingv1.LabelIPAddressFamily: string(fam),
			networkingv1.LabelManagedBy:       ControllerName,
		}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
			Group: "", Resource: "services", Namespace: svc.Namespace, Name: svc.Name}},
	}
}

func notInRange(ip string, ranges []Range) error {
	valid := make([]string, 0, len(ranges))
	for _, r := range ranges {
		if r.Ready {
			valid = append(valid, r.Prefix.String())
		}
	}
	return notInRangeError(fmt.Sprintf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, joinOr(valid)))
}

func joinOr(s []string) string {
	if len(s) == 0 {
		return "<none>"
	}
	out := s[0]
	for _, x := range s[1:] {
		out += "," + x
	}
	return out
}
