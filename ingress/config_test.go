package ingress

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/internal/errdefs"
)

// client is a real client for an address where nothing listens: New and
// Validate never call it.
func client(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestConfigValidate(t *testing.T) {
	cfg := Config{Client: client(t)}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.ControllerName != DefaultControllerName || cfg.HTTPAddress != ":80" || cfg.HTTPSAddress != ":443" || cfg.Logger == nil {
		t.Fatalf("defaults: %+v", cfg)
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no client", Config{}, "Client"},
		{"bad http address", Config{Client: client(t), HTTPAddress: "80"}, "HTTPAddress"},
		{"bad https address", Config{Client: client(t), HTTPSAddress: "[::1"}, "HTTPSAddress"},
		{"bad status address", Config{Client: client(t), StatusAddress: "not a host!"}, "StatusAddress"},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want ErrInvalidArgument naming %s", tc.name, err, tc.field)
		}
	}
	for _, ok := range []string{"10.0.0.1", "fd00::1", "lb.example.com"} {
		if err := (&Config{Client: client(t), StatusAddress: ok}).Validate(); err != nil {
			t.Errorf("StatusAddress %q: %v", ok, err)
		}
	}
}

// A port in use fails New with EADDRINUSE (berth up then runs without the
// controller); free ports are bound by New.
func TestNewPortInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, err = New(Config{Client: client(t), HTTPAddress: "127.0.0.1:0", HTTPSAddress: taken.Addr().String()})
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("New on a taken HTTPS port: %v, want EADDRINUSE", err)
	}
	c, err := New(Config{Client: client(t), HTTPAddress: "127.0.0.1:0", HTTPSAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.httpLn.Close()
	defer c.httpsLn.Close()
	if c.HTTPAddr().(*net.TCPAddr).Port == 0 || c.HTTPSAddr().(*net.TCPAddr).Port == 0 {
		t.Fatalf("bound %s %s", c.HTTPAddr(), c.HTTPSAddr())
	}
}

func TestLoadBalancerStatus(t *testing.T) {
	for addr, want := range map[string][2]string{"10.0.0.7": {"10.0.0.7", ""}, "lb.example": {"", "lb.example"}} {
		c := &Controller{cfg: Config{StatusAddress: addr}}
		lb := c.loadBalancer().Ingress
		if len(lb) != 1 || lb[0].IP != want[0] || lb[0].Hostname != want[1] {
			t.Errorf("%s: %+v", addr, lb)
		}
	}
}
