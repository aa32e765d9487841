package nodeipam

import (
	"errors"
	"net"
	"testing"

	"berth/internal/errdefs"
)

func cidr(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, c, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCIDRSet(t *testing.T) {
	s, err := NewCIDRSet(cidr(t, "10.244.0.0/22"), 24)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Occupy(cidr(t, "10.244.1.0/24")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		c, err := s.Allocate()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.String())
	}
	want := []string{"10.244.0.0/24", "10.244.2.0/24", "10.244.3.0/24"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("allocated %v, want %v", got, want)
		}
	}
	if _, err := s.Allocate(); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("exhausted: err = %v, want ErrUnavailable", err)
	}
	s.Release(cidr(t, "10.244.2.0/24"))
	if c, err := s.Allocate(); err != nil || c.String() != "10.244.2.0/24" {
		t.Fatalf("after release: %v, %v", c, err)
	}
	if err := s.Occupy(cidr(t, "10.244.0.0/24")); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Fatalf("double occupy: %v", err)
	}
	if err := s.Occupy(cidr(t, "10.245.0.0/24")); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("outside: %v", err)
	}
	if s.InUse() != 4 {
		t.Fatalf("in use = %d", s.InUse())
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{}
	if err := o.Validate(); err != nil || o.ClusterCIDR != "10.244.0.0/16" || o.NodeCIDRMaskSize != 24 {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	for _, bad := range []Options{{ClusterCIDR: "nope"}, {ClusterCIDR: "10.0.0.0/24", NodeCIDRMaskSize: 16}, {ClusterCIDR: "fd00::/64", NodeCIDRMaskSize: 80}} {
		if err := bad.Validate(); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%+v: err = %v, want ErrInvalidArgument", bad, err)
		}
	}
}
