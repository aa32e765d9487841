package cluster

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"berth/internal/containerd"
	"berth/internal/errdefs"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		field  string
	}{
		{"pod cidr not a cidr", func(c *Config) { c.PodCIDR = "10.42.0.1" }, "PodCIDR (--pod-cidr)"},
		{"pod cidr host bits", func(c *Config) { c.PodCIDR = "10.42.0.1/24" }, "PodCIDR (--pod-cidr)"},
		{"pod cidr ipv6", func(c *Config) { c.PodCIDR = "fd00::/64" }, "PodCIDR (--pod-cidr)"},
		{"pod cidr too small", func(c *Config) { c.PodCIDR = "10.42.0.0/31" }, "PodCIDR (--pod-cidr)"},
		{"bad kubelet port", func(c *Config) { c.KubeletPort = -1 }, "KubeletPort (--kubelet-port)"},
		{"bridge too long", func(c *Config) { c.CNIBridge = "a-very-long-bridge-name" }, "CNIBridge (--cni-bridge)"},
		{"bad port", func(c *Config) { c.ReadOnlyPort = 70000 }, "ReadOnlyPort (--read-only-port)"},
		{"bad ingress port", func(c *Config) { c.IngressHTTPPort = 65536 }, "IngressHTTPPort (--ingress-http-port)"},
		{"ingress ports equal", func(c *Config) { c.IngressHTTPPort, c.IngressHTTPSPort = 8080, 8080 }, "IngressHTTPSPort (--ingress-https-port)"},
		{"bad registries", func(c *Config) {
			c.Registries = containerd.Registries{Mirrors: map[string]containerd.Mirror{"docker.io": {}}}
		}, `mirrors["docker.io"].endpoint`},
		{"pause registry taken", func(c *Config) {
			c.Registries = containerd.Registries{Mirrors: map[string]containerd.Mirror{PauseRegistryHost: {Endpoints: []string{"http://x"}}}}
		}, "Registries (--registries)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{DataDir: t.TempDir(), CNIBinDir: "/usr/lib/cni"}
			tt.mutate(&cfg)
			err := cfg.Validate()
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("Validate() = %v, want ErrInvalidArgument", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %s", err, tt.field)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, CNIBinDir: "/usr/lib/cni"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.PodCIDR != DefaultPodCIDR || cfg.CNIBridge != DefaultCNIBridge || cfg.ReadOnlyAddress != "127.0.0.1" {
		t.Errorf("defaults: cidr %q bridge %q address %q", cfg.PodCIDR, cfg.CNIBridge, cfg.ReadOnlyAddress)
	}
	if cfg.KubeletPort != 10250 || cfg.NodeName == "" || cfg.NodeName != strings.ToLower(cfg.NodeName) {
		t.Errorf("defaults: kubelet port %d, node name %q (want 10250 and the lower-case host name)", cfg.KubeletPort, cfg.NodeName)
	}
	if cfg.CNIConfDir != filepath.Join(dir, "cni", "net.d") || cfg.ManifestDir() != filepath.Join(dir, "manifests") {
		t.Errorf("dirs: cni %q manifests %q", cfg.CNIConfDir, cfg.ManifestDir())
	}
	if cfg.IngressHTTPPort != 80 || cfg.IngressHTTPSPort != 443 {
		t.Errorf("ingress ports %d %d, want 80 443", cfg.IngressHTTPPort, cfg.IngressHTTPSPort)
	}
	if filepath.Base(cfg.PauseBinary) != "pause" {
		t.Errorf("PauseBinary = %q, want pause beside the executable", cfg.PauseBinary)
	}
	ext := Config{DataDir: dir, CNIBinDir: "/usr/lib/cni", RuntimeEndpoint: "unix:///run/containerd/containerd.sock"}
	if err := ext.Validate(); err != nil {
		t.Fatal(err)
	}
	if ext.CNIConfDir != "/etc/cni/net.d" || ext.PauseBinary != "" {
		t.Errorf("with an external runtime: cni %q pause %q", ext.CNIConfDir, ext.PauseBinary)
	}
}

func TestDataDirLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDataDir(dir); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Fatalf("second lock = %v, want ErrAlreadyExists", err)
	}
	unlock()
	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	again()
}
