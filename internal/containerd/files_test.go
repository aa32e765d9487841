package containerd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"berth/internal/errdefs"
)

// TestWriteFilesWritesConfigAndHosts: config.toml is Render's output and the
// hosts directory holds exactly Registries' hosts files, so a registry
// dropped since the last start is gone.
func TestWriteFilesWritesConfigAndHosts(t *testing.T) {
	cfg := validConfig(t)
	cfg.Registries = Registries{Mirrors: map[string]Mirror{
		"127.0.0.1:5000": {Endpoints: []string{"http://127.0.0.1:5000"}},
		"127.0.0.1:6000": {Endpoints: []string{"http://127.0.0.1:6000"}},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(cfg.HostsDir(), "gone.example.com", "hosts.toml")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("server = \"https://gone.example.com\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(cfg, true); err != nil {
		t.Fatal(err)
	}

	want, err := Render(cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(cfg.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("config.toml differs from Render:\n%s\nwant:\n%s", got, want)
	}
	hosts, err := HostsFiles(cfg.Registries)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(cfg.HostsDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(hosts) {
		t.Errorf("hosts dir holds %d entries, want %d (%v)", len(entries), len(hosts), entries)
	}
	for name, data := range hosts {
		b, err := os.ReadFile(filepath.Join(cfg.HostsDir(), name, "hosts.toml"))
		if err != nil {
			t.Errorf("hosts file for %s: %v", name, err)
			continue
		}
		if !bytes.Equal(b, data) {
			t.Errorf("%s/hosts.toml = %s, want %s", name, b, data)
		}
		// A plain-HTTP registry mirrored by itself is its own server.
		if d := decodeHosts(t, b); d.Server != "http://"+name || len(d.Host) != 0 {
			t.Errorf("%s: server %q hosts %v", name, d.Server, d.Host)
		}
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale hosts entry survived: %v", err)
	}
}

func TestWriteFilesRejectsBadRegistries(t *testing.T) {
	cfg := validConfig(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.Registries = Registries{Mirrors: map[string]Mirror{"docker.io": {}}}
	if err := WriteFiles(cfg, false); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("WriteFiles with a mirror without endpoints = %v, want ErrInvalidArgument", err)
	}
	if _, err := os.Stat(cfg.ConfigPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("config.toml written despite the error: %v", err)
	}
}
