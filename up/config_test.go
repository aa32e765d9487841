package up

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth/controlplane/server"
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
		{"negative compaction interval", func(c *Config) { c.EtcdCompactionInterval = -time.Minute }, "EtcdCompactionInterval (--etcd-compaction-interval)"},
		{"bridge too long", func(c *Config) { c.CNIBridge = "a-very-long-bridge-name" }, "CNIBridge (--cni-bridge)"},
		{"bad port", func(c *Config) { c.ReadOnlyPort = 70000 }, "ReadOnlyPort (--read-only-port)"},
		{"bad ingress port", func(c *Config) { c.IngressHTTPPort = 65536 }, "IngressHTTPPort (--ingress-http-port)"},
		{"ingress ports equal", func(c *Config) { c.IngressHTTPPort, c.IngressHTTPSPort = 8080, 8080 }, "IngressHTTPSPort (--ingress-https-port)"},
		{"bad registries", func(c *Config) {
			c.Registries = containerd.Registries{Mirrors: map[string]containerd.Mirror{"docker.io": {}}}
		}, `mirrors["docker.io"].endpoint`},
		{"kubelet config unknown field", func(c *Config) {
			c.KubeletConfig = writeFile(c.DataDir, "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nmaxPod: 3\n")
		}, `unknown field "maxPod"`},
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
	if cfg.EtcdCompactionInterval != server.DefaultCompactionInterval {
		t.Errorf("EtcdCompactionInterval = %s, want the server's default %s (0 would never compact)", cfg.EtcdCompactionInterval, server.DefaultCompactionInterval)
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

func writeFile(dir, body string) string {
	path := filepath.Join(dir, "kubelet.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		panic(err)
	}
	return path
}

// berth up's agent: no disk eviction thresholds by default (as kind); a
// KubeletConfiguration's fields apply, except what berth up wires itself.
func TestAgentConfigWithAKubeletConfiguration(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), CNIBinDir: "/usr/lib/cni"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	acfg, err := agentConfig(&cfg, "127.0.0.1:6443", "unix:///c.sock", []net.IP{net.ParseIP("10.0.0.10")})
	if err != nil {
		t.Fatal(err)
	}
	if acfg.EvictionHard.String() != "memory.available<100Mi" {
		t.Errorf("default eviction thresholds %s", acfg.EvictionHard)
	}
	cfg.KubeletConfig = writeFile(cfg.DataDir, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: 20
evictionHard: {nodefs.available: 5%}
staticPodPath: /elsewhere
port: 1234
`)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if acfg, err = agentConfig(&cfg, "127.0.0.1:6443", "unix:///c.sock", nil); err != nil {
		t.Fatal(err)
	}
	if acfg.MaxPods != 20 || acfg.EvictionHard.String() != "nodefs.available<5%" || acfg.PodManifestPath != cfg.ManifestDir() || acfg.KubeletPort != cfg.KubeletPort {
		t.Errorf("maxPods %d, evictionHard %s, static pods %s, port %d", acfg.MaxPods, acfg.EvictionHard, acfg.PodManifestPath, acfg.KubeletPort)
	}
}
