package containerd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"berth/internal/errdefs"
)

// hostsDoc is hosts.toml as containerd reads it.
type hostsDoc struct {
	Server     string              `toml:"server"`
	CA         string              `toml:"ca"`
	SkipVerify bool                `toml:"skip_verify"`
	Client     [][]string          `toml:"client"`
	Host       map[string]hostsDoc `toml:"host"`
	Caps       []string            `toml:"capabilities"`
}

func decodeHosts(t *testing.T, data []byte) hostsDoc {
	t.Helper()
	var d hostsDoc
	if err := toml.Unmarshal(data, &d); err != nil {
		t.Fatalf("hosts.toml is not TOML: %v\n%s", err, data)
	}
	return d
}

func TestHostsFiles(t *testing.T) {
	r, err := ParseRegistries([]byte(`
mirrors:
  docker.io:
    endpoint:
      - "http://127.0.0.1:5000"
      - "https://mirror.example.com/v2"
  "127.0.0.1:6000":
    endpoint: ["http://127.0.0.1:6000"]
  "*":
    endpoint: ["https://catchall.example.com"]
configs:
  "127.0.0.1:5000":
    auth: {username: puller, password: s3cret-pw}
  "mirror.example.com":
    tls:
      ca_file: /etc/ssl/mirror-ca.pem
      cert_file: /etc/ssl/client.pem
      key_file: /etc/ssl/client.key
  "registry.example.com":
    tls: {insecure_skip_verify: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	files, err := HostsFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	wantDirs := []string{"127.0.0.1:5000", "127.0.0.1:6000", "_default", "docker.io", "mirror.example.com", "registry.example.com"}
	if got := sortedKeys(files); !reflect.DeepEqual(got, wantDirs) {
		t.Fatalf("hosts dirs = %v, want %v", got, wantDirs)
	}
	for d, data := range files {
		if strings.Contains(string(data), "s3cret-pw") || strings.Contains(string(data), "puller") {
			t.Errorf("%s/hosts.toml carries credentials:\n%s", d, data)
		}
	}

	dockerio := files["docker.io"]
	d := decodeHosts(t, dockerio)
	if d.Server != "https://registry-1.docker.io" {
		t.Errorf("docker.io server = %q", d.Server)
	}
	if len(d.Host) != 2 {
		t.Fatalf("docker.io hosts = %v", d.Host)
	}
	plain := d.Host["http://127.0.0.1:5000"]
	if !reflect.DeepEqual(plain.Caps, []string{"pull", "resolve"}) {
		t.Errorf("mirror capabilities = %v", plain.Caps)
	}
	tlsMirror := d.Host["https://mirror.example.com/v2"]
	if tlsMirror.CA != "/etc/ssl/mirror-ca.pem" || !reflect.DeepEqual(tlsMirror.Client, [][]string{{"/etc/ssl/client.pem", "/etc/ssl/client.key"}}) {
		t.Errorf("mirror TLS = ca %q client %v", tlsMirror.CA, tlsMirror.Client)
	}
	// Mirrors are tried in the file's order: containerd keeps TOML order.
	if i, j := strings.Index(string(dockerio), "127.0.0.1:5000"), strings.Index(string(dockerio), "mirror.example.com"); i < 0 || j < 0 || i > j {
		t.Errorf("mirror order lost:\n%s", dockerio)
	}

	// A registry mirrored by itself over HTTP: its endpoint is the server.
	self := decodeHosts(t, files["127.0.0.1:6000"])
	if self.Server != "http://127.0.0.1:6000" || len(self.Host) != 0 {
		t.Errorf("self-mirrored registry: server %q hosts %v", self.Server, self.Host)
	}
	// "*" → _default, with no server line (each registry's own default).
	def := decodeHosts(t, files["_default"])
	if def.Server != "" || len(def.Host) != 1 {
		t.Errorf("_default: server %q hosts %v", def.Server, def.Host)
	}
	// A config-only registry: its TLS applies to the default endpoint.
	insecure := decodeHosts(t, files["registry.example.com"])
	if insecure.Server != "https://registry.example.com" || !insecure.SkipVerify {
		t.Errorf("registry.example.com: server %q skip_verify %v", insecure.Server, insecure.SkipVerify)
	}
}

func TestHostsFilesAreDeterministic(t *testing.T) {
	r := Registries{Mirrors: map[string]Mirror{
		"a.example.com": {Endpoints: []string{"http://127.0.0.1:1"}},
		"b.example.com": {Endpoints: []string{"http://127.0.0.1:2"}},
	}}
	first, err := HostsFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, _ := HostsFiles(r)
		if !reflect.DeepEqual(first, again) {
			t.Fatal("HostsFiles is not deterministic")
		}
	}
}

func TestTOMLStringRoundTrips(t *testing.T) {
	for _, s := range []string{"plain", `with "quotes"`, `back\slash`, "tab\tnew\nline", "ctl\x01\x7f", "ünïcode"} {
		var v struct{ K string }
		if err := toml.Unmarshal([]byte("K = "+tomlString(s)), &v); err != nil {
			t.Fatalf("tomlString(%q) = %s: %v", s, tomlString(s), err)
		}
		if v.K != s {
			t.Errorf("round trip of %q gave %q", s, v.K)
		}
	}
}

func TestParseRegistriesErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name, yaml, field string
	}{
		{"unknown top-level", "mirror:\n  docker.io: {}\n", "mirror"},
		{"unknown auth field", "configs:\n  r.io:\n    auth: {user: x}\n", "user"},
		{"endpoint not a list", "mirrors:\n  docker.io:\n    endpoint: 7\n", "endpoint"},
		{"no endpoints", "mirrors:\n  docker.io: {}\n", `mirrors["docker.io"].endpoint`},
		{"bad scheme", "mirrors:\n  docker.io:\n    endpoint: [\"ftp://x\"]\n", `mirrors["docker.io"].endpoint[0]`},
		{"endpoint with credentials", "mirrors:\n  docker.io:\n    endpoint: [\"https://u:hunter2@x\"]\n", `mirrors["docker.io"].endpoint[0]`},
		{"scheme in registry name", "mirrors:\n  \"https://docker.io\":\n    endpoint: [\"https://x\"]\n", `mirrors["https://docker.io"]`},
		{"password without username", "configs:\n  r.io:\n    auth: {password: hunter2}\n", `configs["r.io"].auth.username`},
		{"cert without key", "configs:\n  r.io:\n    tls: {cert_file: /c.pem}\n", `configs["r.io"].tls`},
		{"relative ca", "configs:\n  r.io:\n    tls: {ca_file: ca.pem}\n", `configs["r.io"].tls.ca_file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRegistries([]byte(tt.yaml))
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("ParseRegistries = %v, want ErrInvalidArgument", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not name %s", err, tt.field)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q reveals a password", err)
			}
		})
	}
}

func TestRegistryAuthNeverPrintsSecrets(t *testing.T) {
	a := RegistryAuth{Username: "puller", Password: "hunter2", Auth: "aHVudGVyMg==", Token: "tok-hunter2", IdentityToken: "id-hunter2"}
	for _, s := range []string{a.String(), a.GoString(), fmtAll(a), fmtAll(&a), fmtAll(RegistryConfig{Auth: &a})} {
		for _, secret := range []string{"hunter2", "aHVudGVyMg==", "puller"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q reveals %q", s, secret)
			}
		}
	}
}

func TestLoadRegistriesAndWriteHostsDir(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "registries.yaml")
	if err := os.WriteFile(path, []byte("mirrors:\n  docker.io:\n    endpoint: [\"http://127.0.0.1:5000\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := LoadRegistries(path)
	if err != nil {
		t.Fatal(err)
	}
	files, err := HostsFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(dir, "certs.d")
	if err := os.MkdirAll(filepath.Join(hosts, "stale.example.com"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteHostsDir(hosts, files); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(hosts, "stale.example.com")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale hosts entry survived: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(hosts, "docker.io", "hosts.toml"))
	if err != nil || string(got) != string(files["docker.io"]) {
		t.Errorf("docker.io/hosts.toml = %q, %v", got, err)
	}
	if _, err := LoadRegistries(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("LoadRegistries of a missing file succeeded")
	}
}

func fmtAll(v any) string { return fmt.Sprintf("%v %+v %#v %s", v, v, v, v) }
