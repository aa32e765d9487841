package agent

import (
	"errors"
	"strings"
	"testing"
	"time"

	"berth/agent/backoff"
	"berth/agent/imagegc"
	"berth/internal/errdefs"
)

func validConfig() Config {
	return Config{PodManifestPath: "/etc/berth/manifests", RuntimeEndpoint: "unix:///run/containerd/containerd.sock", RootDir: "/var/lib/berth", PodCIDR: "10.88.0.0/16"}
}

func TestConfigDefaults(t *testing.T) {
	a, err := New(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := a.Config()
	if c.CNIConfDir != DefaultCNIConfDir || c.PodLogDir != DefaultPodLogDir || c.CNIBridge != DefaultCNIBridge ||
		len(c.CNIBinDirs) != 2 || c.NodeName == "" || c.NodeIP == "" || c.ContainerBackOff != backoff.DefaultPolicy() || c.Logger == nil ||
		c.ImageGCPolicy != imagegc.DefaultPolicy() {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

// The read-only API is off unless a port is given, and then listens on
// loopback unless an address is given.
func TestReadOnlyPortOffByDefaultAndOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		port        int
		address     string
		wantAddress string
	}{{0, "", ""}, {10255, "", "127.0.0.1"}, {10255, "0.0.0.0", "0.0.0.0"}} {
		cfg := validConfig()
		cfg.ReadOnlyPort, cfg.ReadOnlyAddress = tc.port, tc.address
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if c := a.Config(); c.ReadOnlyPort != tc.port || c.ReadOnlyAddress != tc.wantAddress {
			t.Errorf("port %d address %q: got %d %q, want address %q", tc.port, tc.address, c.ReadOnlyPort, c.ReadOnlyAddress, tc.wantAddress)
		}
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		field  string
	}{
		{"no manifest dir", func(c *Config) { c.PodManifestPath = "" }, "--pod-manifest-path"},
		{"no endpoint", func(c *Config) { c.RuntimeEndpoint = "" }, "--container-runtime-endpoint"},
		{"no root dir", func(c *Config) { c.RootDir = "" }, "--root-dir"},
		{"no pod cidr", func(c *Config) { c.PodCIDR = "" }, "--pod-cidr"},
		{"bad pod cidr", func(c *Config) { c.PodCIDR = "10.88.0.1/16" }, "--pod-cidr"},
		{"bad port", func(c *Config) { c.ReadOnlyPort = 70000 }, "--read-only-port"},
		{"upper-case node", func(c *Config) { c.NodeName = "Node1" }, "--node-name"},
		{"bad node ip", func(c *Config) { c.NodeIP = "nope" }, "--node-ip"},
		{"server and kubeconfig", func(c *Config) { c.Server, c.TokenFile, c.Kubeconfig = "https://127.0.0.1:6443", "/t", "/k" }, "--server"},
		{"server not https", func(c *Config) { c.Server, c.TokenFile = "http://127.0.0.1:6443", "/t" }, "--server"},
		{"server without token", func(c *Config) { c.Server = "https://127.0.0.1:6443" }, "--token-file"},
		{"cert without key", func(c *Config) { c.TLSCertFile = "/c" }, "--tls-cert-file"},
		{"bad kubelet port", func(c *Config) { c.KubeletPort = -1 }, "--kubelet-port"},
		{"bad proxy healthz address", func(c *Config) { c.ProxyHealthzBindAddress = "10256" }, "--proxy-healthz-bind-address"},
		{"sysctl not namespaced", func(c *Config) { c.AllowedUnsafeSysctls = []string{"vm.swappiness"} }, "--allowed-unsafe-sysctls"},
		{"bad sysctl pattern", func(c *Config) { c.AllowedUnsafeSysctls = []string{"kernel.*.x"} }, "--allowed-unsafe-sysctls"},
		{"bad back-off", func(c *Config) {
			c.ContainerBackOff = backoff.Policy{Initial: time.Second, Max: time.Millisecond, ResetAfter: time.Minute}
		}, "ContainerBackOff"},
		{"image gc low over high", func(c *Config) {
			c.ImageGCPolicy = imagegc.Policy{HighThresholdPercent: 70, LowThresholdPercent: 80}
		}, "--image-gc-low-threshold"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.mutate(&c)
			_, err := New(c)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("New = %v, want ErrInvalidArgument naming %s", err, tc.field)
			}
		})
	}
}

// Joined, the manifest directory and the pod CIDR are optional (the podCIDR
// then comes from the Node), and the agent API port defaults to 10250.
func TestConfigJoined(t *testing.T) {
	c := validConfig()
	c.PodManifestPath, c.PodCIDR = "", ""
	c.Server, c.TokenFile, c.CAFile = "https://127.0.0.1:6443", "/data/agent-token", "/data/ca.crt"
	a, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	got := a.Config()
	if !got.Joined() || got.KubeletPort != DefaultKubeletPort || got.ClientCAFile != "/data/ca.crt" || got.PodManifestPath != "" {
		t.Fatalf("joined defaults not applied: %+v", got)
	}
}

// Agents sharing a host have distinct bridges, so their service proxies
// get distinct nftables tables by default.
func TestConfigProxyTableFollowsTheBridge(t *testing.T) {
	for _, tc := range []struct{ bridge, table, want string }{
		{"", "", "berth-proxy"},
		{"berth7", "", "berth-proxy-berth7"},
		{"berth7", "mine", "mine"},
	} {
		c := validConfig()
		c.CNIBridge, c.ProxyTable = tc.bridge, tc.table
		a, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Config().ProxyTable; got != tc.want {
			t.Errorf("bridge %q, table %q: ProxyTable %q, want %q", tc.bridge, tc.table, got, tc.want)
		}
	}
}
