package containerd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"berth/internal/errdefs"
	"berth/internal/prereq"
)

func validConfig(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	return Config{
		Dir:          dir,
		CNIConfDir:   filepath.Join(dir, "net.d"),
		CNIBinDir:    "/usr/lib/cni",
		SandboxImage: "berth.local/berth/pause:abc",
	}
}

// lookup walks a decoded TOML document along keys.
func lookup(t *testing.T, doc map[string]any, keys ...string) any {
	t.Helper()
	var cur any = doc
	for i, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s is not a table", strings.Join(keys[:i], "."))
		}
		if cur, ok = m[k]; !ok {
			t.Fatalf("no key %s in the document", strings.Join(keys[:i+1], "."))
		}
	}
	return cur
}

func TestRenderDecodesToContainerdSettings(t *testing.T) {
	for _, restrict := range []bool{true, false} {
		cfg := validConfig(t)
		cfg.StreamServerAddress = "127.0.0.1"
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		data, err := Render(cfg, restrict)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := toml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("rendered config is not TOML: %v\n%s", err, data)
		}
		cri := []string{"plugins", CRIPlugin}
		want := []struct {
			path []string
			val  any
		}{
			{[]string{"version"}, int64(2)},
			{[]string{"root"}, cfg.Dir + "/root"},
			{[]string{"state"}, cfg.Dir + "/state"},
			{[]string{"grpc", "address"}, cfg.Dir + "/containerd.sock"},
			{[]string{"ttrpc", "address"}, cfg.Dir + "/containerd.sock.ttrpc"},
			{[]string{"debug", "level"}, "info"},
			{[]string{"plugins", "io.containerd.internal.v1.opt", "path"}, cfg.Dir + "/opt"},
			{append(cri, "sandbox_image"), "berth.local/berth/pause:abc"},
			{append(cri, "stream_server_address"), "127.0.0.1"},
			{append(cri, "stream_server_port"), "0"},
			{append(cri, "restrict_oom_score_adj"), restrict},
			{append(cri, "enable_selinux"), false},
			{append(cri, "containerd", "snapshotter"), "overlayfs"},
			{append(cri, "containerd", "default_runtime_name"), "runc"},
			{append(cri, "containerd", "runtimes", "runc", "runtime_type"), "io.containerd.runc.v2"},
			{append(cri, "containerd", "runtimes", "runc", "options", "SystemdCgroup"), false},
			{append(cri, "cni", "bin_dir"), "/usr/lib/cni"},
			{append(cri, "cni", "conf_dir"), cfg.CNIConfDir},
			{append(cri, "cni", "max_conf_num"), int64(1)},
			{append(cri, "registry", "config_path"), cfg.Dir + "/certs.d"},
		}
		for _, w := range want {
			if got := lookup(t, doc, w.path...); !reflect.DeepEqual(got, w.val) {
				t.Errorf("%s = %#v, want %#v", strings.Join(w.path, "."), got, w.val)
			}
		}
		disabled, _ := lookup(t, doc, "disabled_plugins").([]any)
		if len(disabled) != len(DisabledPlugins) {
			t.Errorf("disabled_plugins = %v, want %v", disabled, DisabledPlugins)
		}
	}
}

func TestRenderQuotesPathsWithSpecialCharacters(t *testing.T) {
	cfg := validConfig(t)
	cfg.Dir = `/tmp/a "quoted" dir\with`
	cfg.Root, cfg.State, cfg.Socket = "", "", ""
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	data, err := Render(cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not TOML: %v\n%s", err, data)
	}
	if got := lookup(t, doc, "root"); got != cfg.Dir+"/root" {
		t.Errorf("root = %q, want %q", got, cfg.Dir+"/root")
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		field  string
	}{
		{"no dir", func(c *Config) { c.Dir = "" }, "Dir"},
		{"relative dir", func(c *Config) { c.Dir = "rel" }, "Dir"},
		{"relative socket", func(c *Config) { c.Socket = "x.sock" }, "Socket"},
		{"long socket", func(c *Config) { c.Socket = "/" + strings.Repeat("s", 120) }, "Socket"},
		{"no cni conf dir", func(c *Config) { c.CNIConfDir = "" }, "CNIConfDir"},
		{"no cni bin dir", func(c *Config) { c.CNIBinDir = "" }, "CNIBinDir"},
		{"no sandbox image", func(c *Config) { c.SandboxImage = "" }, "SandboxImage"},
		{"bad log level", func(c *Config) { c.LogLevel = "loud" }, "LogLevel"},
		{"runtime handler not a DNS label", func(c *Config) { c.RuntimeHandlers = []string{"ok", "Not_OK"} }, "RuntimeHandlers[1]"},
		{"runtime handler named runc", func(c *Config) { c.RuntimeHandlers = []string{"runc"} }, "RuntimeHandlers[0]"},
		{"runtime handler twice", func(c *Config) { c.RuntimeHandlers = []string{"a", "a"} }, "RuntimeHandlers[1]"},
		{"negative stop timeout", func(c *Config) { c.StopTimeout = -1 }, "StopTimeout"},
		{"bad registries", func(c *Config) {
			c.Registries.Mirrors = map[string]Mirror{"docker.io": {Endpoints: []string{"ftp://x"}}}
		}, `mirrors["docker.io"].endpoint[0]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validConfig(t)
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
	cfg := validConfig(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Socket != cfg.Dir+"/containerd.sock" || cfg.Root != cfg.Dir+"/root" || cfg.State != cfg.Dir+"/state" {
		t.Errorf("defaults: socket %q root %q state %q", cfg.Socket, cfg.Root, cfg.State)
	}
	if cfg.Endpoint() != "unix://"+cfg.Dir+"/containerd.sock" {
		t.Errorf("Endpoint() = %q", cfg.Endpoint())
	}
	if cfg.StreamServerAddress != "127.0.0.1" || cfg.StopTimeout != DefaultStopTimeout || cfg.ReadyTimeout != DefaultReadyTimeout {
		t.Errorf("defaults: stream %q stop %s ready %s", cfg.StreamServerAddress, cfg.StopTimeout, cfg.ReadyTimeout)
	}
}

func TestRestrictFromStatus(t *testing.T) {
	tests := []struct {
		status  string
		want    bool
		wantErr bool
	}{
		{"Name:\tx\nCapEff:\t000001ffffffffff\n", false, false}, // all caps incl. SYS_RESOURCE
		{"CapEff:\t00000000a80425fb\n", true, false},            // docker's default set lacks it
		{"CapEff:\t0000000001000000\n", false, false},           // only CAP_SYS_RESOURCE
		{"Name:\tx\n", false, true},
		{"CapEff:\tzz\n", false, true},
	}
	for _, tt := range tests {
		got, err := restrictFromStatus(tt.status)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("restrictFromStatus(%q) = %v, %v; want %v, err %v", tt.status, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestContainerdAcceptsRenderedConfig has the real containerd load the
// rendered config and dump what it understood.
func TestContainerdAcceptsRenderedConfig(t *testing.T) {
	bin := requireBinary(t, "containerd")
	cfg := validConfig(t)
	cfg.Registries = Registries{Mirrors: map[string]Mirror{"docker.io": {Endpoints: []string{"http://127.0.0.1:5000"}}}}
	cfg.RuntimeHandlers = []string{"test-handler"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	data, err := Render(cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.ConfigPath(), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config", cfg.ConfigPath(), "config", "dump").CombinedOutput()
	if err != nil {
		t.Fatalf("containerd config dump: %v\n%s", err, out)
	}
	var doc map[string]any
	if err := toml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("containerd's dump is not TOML: %v", err)
	}
	cri := []string{"plugins", CRIPlugin}
	for _, w := range []struct {
		path []string
		val  any
	}{
		{append(cri, "restrict_oom_score_adj"), true},
		{append(cri, "sandbox_image"), cfg.SandboxImage},
		{append(cri, "registry", "config_path"), cfg.HostsDir()},
		{append(cri, "cni", "conf_dir"), cfg.CNIConfDir},
		{append(cri, "containerd", "runtimes", "runc", "options", "SystemdCgroup"), false},
		{append(cri, "containerd", "runtimes", "test-handler", "runtime_type"), "io.containerd.runc.v2"},
		{append(cri, "containerd", "runtimes", "test-handler", "options", "SystemdCgroup"), false},
		{[]string{"grpc", "address"}, cfg.Socket},
	} {
		if got := lookup(t, doc, w.path...); !reflect.DeepEqual(got, w.val) {
			t.Errorf("containerd understood %s = %#v, want %#v", strings.Join(w.path, "."), got, w.val)
		}
	}
}

// requireBinary finds bin or, outside CI, skips; under CI=true a missing
// prerequisite fails.
func requireBinary(t *testing.T, bin string) string {
	t.Helper()
	p, err := LookPath(bin)
	if err != nil {
		prereq.Missing(t, "%s not on PATH (Debian: apt-get install %s)", bin, bin)
	}
	return p
}
