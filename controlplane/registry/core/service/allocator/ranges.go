package allocator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Errors of the allocators, worded as kube-apiserver's.
var (
	// ErrFull: no free item is left.
	ErrFull = errors.New("range is full")
	// ErrAllocated: a requested item is taken (errors.Is matches both
	// ErrIPAllocated and ErrPortAllocated).
	ErrAllocated = errors.New("already allocated")
	// ErrIPAllocated and ErrPortAllocated: a requested item is taken.
	ErrIPAllocated   = allocatedError("provided IP is already allocated")
	ErrPortAllocated = allocatedError("provided port is already allocated")
	// ErrNotInRange: a requested item is outside the range (the error
	// itself, from Offset, names the range).
	ErrNotInRange = errors.New("not in range")
)

type allocatedError string

func (e allocatedError) Error() string        { return string(e) }
func (e allocatedError) Is(target error) bool { return target == ErrAllocated }

type notInRangeError string

func (e notInRangeError) Error() string        { return string(e) }
func (e notInRangeError) Is(target error) bool { return target == ErrNotInRange }

// Range maps the items of one range (IPs or ports, as strings) to bitmap
// offsets.
type Range interface {
	// String is the range as stored in the RangeAllocation and given on
	// the command line ("10.43.0.0/16", "30000-32767").
	String() string
	// Size is the number of items.
	Size() int
	// LowBand is how many of the first items dynamic allocation leaves for
	// requests until the rest is full.
	LowBand() int
	// Offset is item's offset; an error wrapping ErrNotInRange (worded as
	// upstream's) when it is outside the range or malformed.
	Offset(item string) (int, error)
	// Item is the item at offset.
	Item(offset int) string
	// allocated is the error for a taken item.
	allocated() error
}

// MaxRangeBits bounds a range to 2^20 items (a 128 KiB bitmap), as
// kube-apiserver bounds --service-cluster-ip-range (/12 for IPv4, /108 for
// IPv6).
const MaxRangeBits = 20

// IPRange is a service CIDR: every address but the network address (and,
// for IPv4, the broadcast address), at most 65536 of them for IPv6 as
// upstream. Its first address is the `kubernetes` Service's.
type IPRange struct {
	prefix netip.Prefix
	size   int
}

// ParseIPRange parses a CIDR such as 10.43.0.0/16.
func ParseIPRange(cidr string) (*IPRange, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("service CIDR %q: %v", cidr, err)
	}
	if p.Masked() != p {
		return nil, fmt.Errorf("service CIDR %q is not a network address (want %s)", cidr, p.Masked())
	}
	host := p.Addr().BitLen() - p.Bits()
	if host > MaxRangeBits {
		return nil, fmt.Errorf("service CIDR %q is too large; for %d-bit addresses, the mask must be >= %d", cidr, p.Addr().BitLen(), p.Addr().BitLen()-MaxRangeBits)
	}
	size := 1<<host - 1 // not the network address
	if p.Addr().Is4() {
		size-- // nor the broadcast address
	} else if size > 1<<16 {
		size = 1 << 16
	}
	if size < 2 {
		return nil, fmt.Errorf("service CIDR %q is too small: it must hold at least 2 addresses", cidr)
	}
	return &IPRange{prefix: p, size: size}, nil
}

// Prefix is the CIDR.
func (r *IPRange) Prefix() netip.Prefix { return r.prefix }

// String implements Range.
func (r *IPRange) String() string { return r.prefix.String() }

// Size implements Range.
func (r *IPRange) Size() int { return r.size }

// LowBand implements Range: min(max(16, size/16), 256), none below 16 addresses.
func (r *IPRange) LowBand() int { return band(r.size+2, 16, 256, 16) }

// First is the range's first address, the `kubernetes` Service's.
func (r *IPRange) First() netip.Addr { return r.prefix.Addr().Next() }

// Offset implements Range.
func (r *IPRange) Offset(item string) (int, error) {
	a, err := netip.ParseAddr(item)
	if err == nil {
		a = a.Unmap()
	}
	if err != nil || !r.prefix.Contains(a) {
		return 0, r.notInRange(item)
	}
	off := int(low64(a)-low64(r.prefix.Addr())) - 1
	if off < 0 || off >= r.size {
		return 0, r.notInRange(item)
	}
	return off, nil
}

func (r *IPRange) notInRange(item string) error {
	return notInRangeError(fmt.Sprintf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", item, r.prefix))
}

// Item implements Range.
func (r *IPRange) Item(offset int) string {
	b := r.prefix.Addr().As16()
	v := binary.BigEndian.Uint64(b[8:]) + uint64(offset) + 1
	binary.BigEndian.PutUint64(b[8:], v)
	a := netip.AddrFrom16(b)
	if r.prefix.Addr().Is4() {
		a = a.Unmap()
	}
	return a.String()
}

func (r *IPRange) allocated() error { return ErrIPAllocated }

// low64 is the address's last 64 bits (ranges span at most 20 bits).
func low64(a netip.Addr) uint64 {
	b := a.As16()
	return binary.BigEndian.Uint64(b[8:])
}

// PortRange is a node port range such as 30000-32767.
type PortRange struct {
	base, size int
}

// DefaultNodePortRange is kube-apiserver's --service-node-port-range default.
const DefaultNodePortRange = "30000-32767"

// ParsePortRange parses "first-last" or a single port.
func ParsePortRange(s string) (*PortRange, error) {
	first, last, found := strings.Cut(strings.TrimSpace(s), "-")
	lo, err1 := strconv.Atoi(first)
	hi := lo
	var err2 error
	if found {
		hi, err2 = strconv.Atoi(last)
	}
	if err1 != nil || err2 != nil || lo < 1 || hi > 65535 || hi < lo {
		return nil, fmt.Errorf("port range %q: want FIRST-LAST within 1-65535", s)
	}
	return &PortRange{base: lo, size: hi - lo + 1}, nil
}

// String implements Range.
func (r *PortRange) String() string { return fmt.Sprintf("%d-%d", r.base, r.base+r.size-1) }

// Size implements Range.
func (r *PortRange) Size() int { return r.size }

// LowBand implements Range: min(max(16, size/32), 128), none below 16 ports.
func (r *PortRange) LowBand() int { return band(r.size, 16, 128, 32) }

// Contains reports whether port is in the range.
func (r *PortRange) Contains(port int) bool { return port >= r.base && port < r.base+r.size }

// Offset implements Range.
func (r *PortRange) Offset(item string) (int, error) {
	p, err := strconv.Atoi(item)
	if err != nil || !r.Contains(p) {
		return 0, notInRangeError(fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", r))
	}
	return p - r.base, nil
}

// Item implements Range.
func (r *PortRange) Item(offset int) string { return strconv.Itoa(r.base + offset) }

func (r *PortRange) allocated() error { return ErrPortAllocated }

// band is min(max(lo, size/step), hi), 0 for ranges of lo items or fewer.
func band(size, lo, hi, step int) int {
	if size <= lo {
		return 0
	}
	return min(max(lo, size/step), hi)
}
