package cni

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"berth/internal/errdefs"
)

func validConfig(t *testing.T) Config {
	dir := t.TempDir()
	return Config{
		NetworkName: "berth",
		BridgeName:  "berth0",
		PodCIDRs:    []string{"10.222.7.0/24"},
		BinDirs:     []string{filepath.Join(dir, "bin")},
		ConfDir:     filepath.Join(dir, "net.d"),
		DataDir:     filepath.Join(dir, "ipam"),
	}
}

func TestValidateRejectsBadFields(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		field  string
	}{
		{"empty network name", func(c *Config) { c.NetworkName = "" }, "NetworkName"},
		{"network name with slash", func(c *Config) { c.NetworkName = "a/b" }, "NetworkName"},
		{"empty bridge", func(c *Config) { c.BridgeName = "" }, "BridgeName"},
		{"bridge name too long", func(c *Config) { c.BridgeName = "sixteen-chars-xx" }, "BridgeName"},
		{"bridge name with space", func(c *Config) { c.BridgeName = "br 0" }, "BridgeName"},
		{"no pod cidr", func(c *Config) { c.PodCIDRs = nil }, "PodCIDRs"},
		{"two pod cidrs", func(c *Config) { c.PodCIDRs = []string{"10.1.0.0/24", "10.2.0.0/24"} }, "PodCIDRs"},
		{"not a cidr", func(c *Config) { c.PodCIDRs = []string{"10.1.0.0"} }, "PodCIDRs[0]"},
		{"ipv6", func(c *Config) { c.PodCIDRs = []string{"fd00::/64"} }, "PodCIDRs[0]"},
		{"host bits", func(c *Config) { c.PodCIDRs = []string{"10.1.0.5/24"} }, "PodCIDRs[0]"},
		{"too small", func(c *Config) { c.PodCIDRs = []string{"10.1.0.0/31"} }, "PodCIDRs[0]"},
		{"no bin dirs", func(c *Config) { c.BinDirs = nil }, "BinDirs"},
		{"relative bin dir", func(c *Config) { c.BinDirs = []string{"/ok", "bin"} }, "BinDirs[1]"},
		{"relative conf dir", func(c *Config) { c.ConfDir = "net.d" }, "ConfDir"},
		{"empty data dir", func(c *Config) { c.DataDir = "" }, "DataDir"},
		{"mtu too small", func(c *Config) { c.MTU = 100 }, "MTU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validConfig(t)
			tt.mutate(&cfg)
			err := cfg.Validate()
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("Validate() = %v, want ErrInvalidArgument", err)
			}
			if !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("error %q does not name field %s", err, tt.field)
			}
			if _, err := Conflist(cfg); !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("Conflist() accepted an invalid config: %v", err)
			}
		})
	}
	if err := validConfig(t).Validate(); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
}

func TestConflistContent(t *testing.T) {
	cfg := validConfig(t)
	cfg.MTU = 1450
	b, err := Conflist(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// libcni (what containerd uses) must accept it.
	list, err := libcni.NetworkConfFromBytes(b)
	if err != nil {
		t.Fatalf("libcni rejects the conflist: %v\n%s", err, b)
	}
	if list.CNIVersion != "1.0.0" || list.Name != "berth" {
		t.Errorf("cniVersion/name = %q/%q", list.CNIVersion, list.Name)
	}
	var types []string
	for _, p := range list.Plugins {
		types = append(types, p.Network.Type)
	}
	if strings.Join(types, ",") != "bridge,portmap" {
		t.Fatalf("plugins = %v, want bridge,portmap", types)
	}
	if !list.Plugins[1].Network.Capabilities["portMappings"] {
		t.Errorf("portmap lacks the portMappings capability")
	}

	var bridge struct {
		Bridge      string `json:"bridge"`
		IsGateway   *bool  `json:"isGateway"`
		IPMasq      *bool  `json:"ipMasq"`
		HairpinMode *bool  `json:"hairpinMode"`
		MTU         int    `json:"mtu"`
		IPAM        struct {
			Type    string `json:"type"`
			DataDir string `json:"dataDir"`
			Ranges  [][]struct {
				Subnet string `json:"subnet"`
			} `json:"ranges"`
			Routes []struct {
				Dst string `json:"dst"`
			} `json:"routes"`
		} `json:"ipam"`
	}
	if err := json.Unmarshal(list.Plugins[0].Bytes, &bridge); err != nil {
		t.Fatal(err)
	}
	if bridge.Bridge != cfg.BridgeName {
		t.Errorf("bridge = %q, want %q", bridge.Bridge, cfg.BridgeName)
	}
	if bridge.IsGateway == nil || !*bridge.IsGateway {
		t.Errorf("isGateway not true")
	}
	if bridge.IPMasq == nil || *bridge.IPMasq {
		t.Errorf("ipMasq must be present and false (nothing is NATed out of the machine)")
	}
	if bridge.HairpinMode == nil || !*bridge.HairpinMode {
		t.Errorf("hairpinMode not true")
	}
	if bridge.MTU != 1450 {
		t.Errorf("mtu = %d, want 1450", bridge.MTU)
	}
	if bridge.IPAM.Type != "host-local" || bridge.IPAM.DataDir != cfg.DataDir {
		t.Errorf("ipam = %q dataDir %q, want host-local in %q", bridge.IPAM.Type, bridge.IPAM.DataDir, cfg.DataDir)
	}
	if len(bridge.IPAM.Ranges) != 1 || len(bridge.IPAM.Ranges[0]) != 1 || bridge.IPAM.Ranges[0][0].Subnet != "10.222.7.0/24" {
		t.Errorf("ranges = %+v, want the pod CIDR", bridge.IPAM.Ranges)
	}
	if len(bridge.IPAM.Routes) != 1 || bridge.IPAM.Routes[0].Dst != "0.0.0.0/0" {
		t.Errorf("routes = %+v, want a default route", bridge.IPAM.Routes)
	}

	cfg.MTU = 0
	b, err = Conflist(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"mtu"`) {
		t.Errorf("MTU 0 must leave mtu out:\n%s", b)
	}
}

func TestWriteIsAtomicAndReplaces(t *testing.T) {
	cfg := validConfig(t)
	path, err := Write(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(cfg.ConfDir, "10-berth.conflist") {
		t.Errorf("path = %s", path)
	}
	cfg.PodCIDRs = []string{"10.222.8.0/24"}
	if _, err := Write(cfg); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Conflist(cfg)
	if string(got) != string(want) {
		t.Errorf("file holds\n%s\nwant\n%s", got, want)
	}
	// Only the conflist is left in the directory: no temporary files.
	entries, err := os.ReadDir(cfg.ConfDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("conf dir holds %v, want only %s", names, FileName)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
	}
	// libcni finds it by name, as containerd does.
	if _, err := libcni.LoadNetworkConf(cfg.ConfDir, "berth"); err != nil {
		t.Errorf("libcni cannot load the written network: %v", err)
	}

	cfg.BridgeName = ""
	if _, err := Write(cfg); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("Write(invalid) = %v, want ErrInvalidArgument", err)
	}
}
