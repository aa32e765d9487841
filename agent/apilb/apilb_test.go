package apilb

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"berth/internal/errdefs"
)

// listen is a TCP listener on loopback accepting and holding connections.
func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return l
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestDialFailsOverAndSticks(t *testing.T) {
	a, b := listen(t), listen(t)
	lb, err := New(Config{Servers: []string{"https://" + a.Addr().String(), "https://" + b.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	dial := func() string {
		t.Helper()
		c, err := lb.DialContext(context.Background(), "tcp", "ignored:443")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.RemoteAddr().String()
	}
	if got := dial(); got != a.Addr().String() {
		t.Fatalf("first dial reached %s, want the first server %s", got, a.Addr())
	}
	a.Close() // the first server goes away
	if got := dial(); got != b.Addr().String() {
		t.Fatalf("after the first server left, dial reached %s, want %s", got, b.Addr())
	}
	if lb.Current() != b.Addr().String() {
		t.Fatalf("Current = %s, want %s", lb.Current(), b.Addr())
	}
	if got := dial(); got != b.Addr().String() {
		t.Fatalf("the balancer did not stick to %s: %s", b.Addr(), got)
	}
}

func TestDialUsesLearnedServers(t *testing.T) {
	learned := listen(t)
	lb, err := New(Config{Servers: []string{"https://" + closedAddr(t)}})
	if err != nil {
		t.Fatal(err)
	}
	lb.SetEndpoints([]string{learned.Addr().String()})
	c, err := lb.DialContext(context.Background(), "tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if c.RemoteAddr().String() != learned.Addr().String() {
		t.Fatalf("dial reached %s, want the learned server %s", c.RemoteAddr(), learned.Addr())
	}
}

func TestDialNamesEveryFailure(t *testing.T) {
	x, y := closedAddr(t), closedAddr(t)
	lb, err := New(Config{Servers: []string{"https://" + x, "https://" + y}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = lb.DialContext(context.Background(), "tcp", "")
	if err == nil {
		t.Fatal("dial succeeded with no server up")
	}
	for _, addr := range []string{x, y} {
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("error %q does not name %s", err, addr)
		}
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, bad := range [][]string{nil, {"http://10.0.0.1:6443"}, {"https://"}, {"https://10.0.0.1:6443/api"}} {
		if _, err := New(Config{Servers: bad}); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("New(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	lb, err := New(Config{Servers: []string{"https://a.example", "https://10.0.0.2:6443", "https://a.example:443"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := lb.Servers(); !slices.Equal(got, []string{"a.example:443", "10.0.0.2:6443"}) {
		t.Errorf("Servers = %v", got)
	}
}

func TestEndpoints(t *testing.T) {
	name, port, other := "https", int32(6443), int32(9)
	otherName := "metrics"
	no := false
	slices := []*discoveryv1.EndpointSlice{{
		Ports: []discoveryv1.EndpointPort{{Name: &otherName, Port: &other}, {Name: &name, Port: &port}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.2"}},
			{Addresses: []string{"10.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: &no}},
			{Addresses: []string{"fd00::4"}},
		},
	}}
	got := Endpoints(slices)
	want := []string{"10.0.0.2:6443", "[fd00::4]:6443"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Endpoints = %v, want %v", got, want)
	}
}
