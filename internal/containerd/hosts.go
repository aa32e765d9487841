package containerd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// DefaultHostsDir is the name containerd gives the hosts directory that
// applies to registries without their own (the "*" entry).
const DefaultHostsDir = "_default"

// HostsFiles renders containerd's registry host configuration for r: one
// hosts.toml per registry named in r.Mirrors or r.Configs, keyed by its
// directory name under config_path ("docker.io", "127.0.0.1:5000",
// "_default" for "*"). Mirror endpoints come first, in the file's order, each
// allowed to pull and resolve, with the TLS settings of its host's config
// (or of "*"); then the registry itself as the server (containerd's default
// endpoint: https://registry-1.docker.io for docker.io, https://HOST
// otherwise — or the mirror endpoint whose host is the registry's own, so a
// plain-HTTP registry is not tried over HTTPS). Credentials are not written.
// Pure: same input, same bytes.
func HostsFiles(r Registries) (map[string][]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for n := range r.Mirrors {
		names[n] = true
	}
	for n := range r.Configs {
		names[n] = true
	}
	out := make(map[string][]byte, len(names))
	for _, name := range sortedKeys(names) {
		dir := name
		if name == Wildcard {
			dir = DefaultHostsDir
		}
		out[dir] = renderHosts(name, r)
	}
	return out, nil
}

// tlsFor is the TLS config applying to host: its own, else "*"'s.
func (r Registries) tlsFor(host string) *RegistryTLS {
	if c, ok := r.Configs[host]; ok {
		return c.TLS
	}
	if c, ok := r.Configs[Wildcard]; ok {
		return c.TLS
	}
	return nil
}

// defaultServer is containerd's default endpoint for a registry host.
func defaultServer(host string) string {
	if host == "docker.io" {
		return "https://registry-1.docker.io"
	}
	return "https://" + host
}

func renderHosts(name string, r Registries) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by berth from the registries file for %s; rewritten at every start.\n", name)
	var mirrors []string
	if m, ok := r.Mirrors[name]; ok {
		mirrors = m.Endpoints
	}
	server := ""
	if name != Wildcard {
		server = defaultServer(name)
	}
	var hosts []string
	for _, e := range mirrors {
		u, _ := ParseEndpoint(e) // validated
		if name != Wildcard && u.Host == name && server == defaultServer(name) {
			server = strings.TrimSuffix(u.String(), "/")
			continue
		}
		hosts = append(hosts, strings.TrimSuffix(u.String(), "/"))
	}
	// Top-level settings are the server's; without a server line (the "*"
	// entry) containerd uses each registry's default endpoint with them.
	if server != "" {
		fmt.Fprintf(&b, "server = %s\n", tomlString(server))
	}
	writeTLS(&b, "", r.tlsFor(name))
	for _, h := range hosts {
		u, _ := ParseEndpoint(h)
		fmt.Fprintf(&b, "\n[host.%s]\n", tomlString(h))
		b.WriteString("  capabilities = [\"pull\", \"resolve\"]\n")
		writeTLS(&b, "  ", r.tlsFor(u.Host))
	}
	return []byte(b.String())
}

func writeTLS(b *strings.Builder, indent string, t *RegistryTLS) {
	if t == nil {
		return
	}
	if t.CAFile != "" {
		fmt.Fprintf(b, "%sca = %s\n", indent, tomlString(t.CAFile))
	}
	if t.CertFile != "" {
		fmt.Fprintf(b, "%sclient = [[%s, %s]]\n", indent, tomlString(t.CertFile), tomlString(t.KeyFile))
	}
	if t.InsecureSkipVerify {
		fmt.Fprintf(b, "%sskip_verify = true\n", indent)
	}
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// WriteHostsDir replaces dir with the given hosts files (HostsFiles'
// output): dir/<name>/hosts.toml each. Entries from an earlier start that
// are no longer configured disappear.
func WriteHostsDir(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("containerd hosts dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("containerd hosts dir: %w", err)
	}
	for name, data := range files {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("containerd hosts dir: %w", err)
		}
		if err := os.WriteFile(filepath.Join(d, "hosts.toml"), data, 0o644); err != nil {
			return fmt.Errorf("containerd hosts dir: %w", err)
		}
	}
	return nil
}
