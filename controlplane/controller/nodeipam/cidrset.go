package nodeipam

import (
	"encoding/binary"
	"fmt"
	"net"

	"berth/internal/errdefs"
)

// CIDRSet hands out the /maskSize subnets of an IPv4 cluster CIDR, each at
// most once, round-robin from the last one handed out (upstream's range
// allocator order). It is not safe for concurrent use.
type CIDRSet struct {
	base     uint32
	maskSize int
	count    int
	used     []bool
	next     int
	inUse    int
}

// NewCIDRSet returns the set of /maskSize subnets of cluster (IPv4 only).
func NewCIDRSet(cluster *net.IPNet, maskSize int) (*CIDRSet, error) {
	ip4 := cluster.IP.To4()
	ones, bits := cluster.Mask.Size()
	if ip4 == nil || bits != 32 {
		return nil, fmt.Errorf("cluster CIDR %s: only IPv4 is supported: %w", cluster, errdefs.ErrInvalidArgument)
	}
	if maskSize < ones || maskSize > 30 {
		return nil, fmt.Errorf("node CIDR mask size %d: want between the cluster prefix /%d and /30: %w", maskSize, ones, errdefs.ErrInvalidArgument)
	}
	if maskSize-ones > 20 {
		return nil, fmt.Errorf("node CIDR mask size %d: more than 2^20 subnets in %s: %w", maskSize, cluster, errdefs.ErrInvalidArgument)
	}
	n := 1 << (maskSize - ones)
	return &CIDRSet{base: binary.BigEndian.Uint32(ip4.Mask(cluster.Mask)), maskSize: maskSize, count: n, used: make([]bool, n)}, nil
}

func (s *CIDRSet) subnet(i int) *net.IPNet {
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, s.base+uint32(i)<<(32-s.maskSize))
	return &net.IPNet{IP: ip, Mask: net.CIDRMask(s.maskSize, 32)}
}

// index returns the subnet index of c, which must be one of the set's subnets.
func (s *CIDRSet) index(c *net.IPNet) (int, error) {
	ip4 := c.IP.To4()
	ones, bits := c.Mask.Size()
	if ip4 == nil || bits != 32 || ones != s.maskSize {
		return 0, fmt.Errorf("CIDR %s is not a /%d IPv4 subnet: %w", c, s.maskSize, errdefs.ErrInvalidArgument)
	}
	v := binary.BigEndian.Uint32(ip4.Mask(c.Mask))
	off := v - s.base
	i := int(off >> (32 - s.maskSize))
	if v < s.base || i >= s.count {
		return 0, fmt.Errorf("CIDR %s is outside the cluster CIDR %s: %w", c, s.subnet(0).IP, errdefs.ErrInvalidArgument)
	}
	return i, nil
}

// Allocate hands out the next free subnet; ErrUnavailable when none is left.
func (s *CIDRSet) Allocate() (*net.IPNet, error) {
	for k := range s.count {
		i := (s.next + k) % s.count
		if !s.used[i] {
			s.used[i] = true
			s.inUse++
			s.next = (i + 1) % s.count
			return s.subnet(i), nil
		}
	}
	return nil, fmt.Errorf("all %d node CIDRs are allocated: %w", s.count, errdefs.ErrUnavailable)
}

// Occupy marks c as used (a node that already has it); occupying a used
// subnet is ErrAlreadyExists.
func (s *CIDRSet) Occupy(c *net.IPNet) error {
	i, err := s.index(c)
	if err != nil {
		return err
	}
	if s.used[i] {
		return fmt.Errorf("CIDR %s is already allocated: %w", c, errdefs.ErrAlreadyExists)
	}
	s.used[i] = true
	s.inUse++
	return nil
}

// Release frees c (releasing a free or foreign subnet is a no-op).
func (s *CIDRSet) Release(c *net.IPNet) {
	if i, err := s.index(c); err == nil && s.used[i] {
		s.used[i] = false
		s.inUse--
	}
}

// InUse is the number of allocated subnets.
func (s *CIDRSet) InUse() int { return s.inUse }
