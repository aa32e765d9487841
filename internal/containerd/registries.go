package containerd

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"berth/internal/errdefs"
)

// Registries is a node's registry configuration, in the format of k3s's
// registries.yaml:
//
//	mirrors:
//	  docker.io:
//	    endpoint: ["http://127.0.0.1:5000"]
//	configs:
//	  "127.0.0.1:5000":
//	    auth: {username: puller, password: secret}
//	    tls: {insecure_skip_verify: true, ca_file: /etc/ssl/mirror-ca.pem}
//
// Mirrors become containerd's hosts.toml files (HostsFiles); the TLS part
// of Configs goes there too. The auth part does not: containerd 1.6's CRI
// takes credentials with each pull, so the agent's credential keyring
// (berth/agent/credentials) hands them over. "*" as a mirror or config key
// is the default for every registry without its own entry.
type Registries struct {
	// Mirrors maps a registry host ("docker.io", "registry.example.com:5000",
	// "*") to the endpoints tried, in order, before the registry itself.
	Mirrors map[string]Mirror `json:"mirrors,omitempty"`
	// Configs maps a registry or endpoint host ("127.0.0.1:5000", "*") to
	// its credentials and TLS settings.
	Configs map[string]RegistryConfig `json:"configs,omitempty"`
}

// Mirror is one registry's list of mirror endpoints.
type Mirror struct {
	// Endpoints are URLs such as "http://127.0.0.1:5000" or
	// "https://mirror.example.com/v2"; without a scheme, https is meant.
	Endpoints []string `json:"endpoint,omitempty"`
}

// RegistryConfig is the auth and TLS of one registry host.
type RegistryConfig struct {
	Auth *RegistryAuth `json:"auth,omitempty"`
	TLS  *RegistryTLS  `json:"tls,omitempty"`
}

// RegistryAuth are credentials for one registry host. It never prints its
// secrets: String and GoString redact them.
type RegistryAuth struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// Auth is base64("username:password"), as in a docker config.json.
	Auth string `json:"auth,omitempty"`
	// Token is a bearer token for the registry (CRI's registry_token).
	Token string `json:"token,omitempty"`
	// IdentityToken is an OAuth refresh token (CRI's identity_token).
	IdentityToken string `json:"identity_token,omitempty"`
}

// String describes the credential without revealing it.
func (a RegistryAuth) String() string {
	kinds := []string{}
	if a.Username != "" {
		kinds = append(kinds, "username")
	}
	if a.Password != "" {
		kinds = append(kinds, "password")
	}
	if a.Auth != "" {
		kinds = append(kinds, "auth")
	}
	if a.Token != "" {
		kinds = append(kinds, "token")
	}
	if a.IdentityToken != "" {
		kinds = append(kinds, "identity_token")
	}
	return "RegistryAuth{" + strings.Join(kinds, ",") + " redacted}"
}

// GoString keeps %#v from printing the secrets.
func (a RegistryAuth) GoString() string { return a.String() }

// RegistryTLS are the TLS settings towards one registry host.
type RegistryTLS struct {
	CAFile             string `json:"ca_file,omitempty"`
	CertFile           string `json:"cert_file,omitempty"`
	KeyFile            string `json:"key_file,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
}

// Wildcard is the registry key that applies to every registry without an
// entry of its own.
const Wildcard = "*"

// LoadRegistries reads and validates a registries file (YAML or JSON).
func LoadRegistries(path string) (Registries, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Registries{}, fmt.Errorf("registries file: %w", err)
	}
	r, err := ParseRegistries(data)
	if err != nil {
		return Registries{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// ParseRegistries decodes and validates a registries file. Unknown fields
// are errors, named with their path.
func ParseRegistries(data []byte) (Registries, error) {
	var r Registries
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		// The YAML/JSON decoder names the unknown or mistyped field; it
		// never quotes values.
		return Registries{}, fmt.Errorf("registries: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	if err := r.Validate(); err != nil {
		return Registries{}, err
	}
	return r, nil
}

// Validate checks every mirror and config, naming the field at fault. Its
// errors wrap errdefs.ErrInvalidArgument and never contain credentials.
func (r Registries) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("registries: %s: %s: %w", field, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
	}
	for _, name := range sortedKeys(r.Mirrors) {
		field := fmt.Sprintf("mirrors[%q]", name)
		if err := validRegistryHost(name); err != nil {
			return bad(field, "%v", err)
		}
		m := r.Mirrors[name]
		if len(m.Endpoints) == 0 {
			return bad(field+".endpoint", "must list at least one endpoint URL")
		}
		for i, e := range m.Endpoints {
			if _, err := ParseEndpoint(e); err != nil {
				return bad(fmt.Sprintf("%s.endpoint[%d]", field, i), "%v", err)
			}
		}
	}
	for _, name := range sortedKeys(r.Configs) {
		field := fmt.Sprintf("configs[%q]", name)
		if err := validRegistryHost(name); err != nil {
			return bad(field, "%v", err)
		}
		c := r.Configs[name]
		if a := c.Auth; a != nil {
			if a.Password != "" && a.Username == "" {
				return bad(field+".auth.username", "required with a password")
			}
			if a.Username != "" && a.Auth != "" {
				return bad(field+".auth", "give either username/password or auth, not both")
			}
		}
		if t := c.TLS; t != nil {
			if (t.CertFile == "") != (t.KeyFile == "") {
				return bad(field+".tls", "cert_file and key_file go together")
			}
			for _, f := range []struct{ name, path string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
				if f.path != "" && !strings.HasPrefix(f.path, "/") {
					return bad(field+".tls."+f.name, "%q is not an absolute path", f.path)
				}
			}
		}
	}
	return nil
}

// validRegistryHost accepts "*" or a host with an optional port, no scheme
// and no path.
func validRegistryHost(name string) error {
	if name == Wildcard {
		return nil
	}
	if name == "" {
		return fmt.Errorf("the registry name must not be empty")
	}
	if strings.Contains(name, "://") || strings.ContainsAny(name, "/ \t") {
		return fmt.Errorf("%q must be a host[:port] without scheme or path", name)
	}
	if h, p, err := net.SplitHostPort(name); err == nil {
		if h == "" || p == "" {
			return fmt.Errorf("%q must be a host[:port]", name)
		}
	}
	return nil
}

// ParseEndpoint parses a mirror endpoint URL; without a scheme it is https.
func ParseEndpoint(e string) (*url.URL, error) {
	s := e
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %v", e, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q: scheme must be http or https", e)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q has no host", e)
	}
	if u.User != nil {
		return nil, fmt.Errorf("endpoint URLs must not carry credentials; put them under configs.<host>.auth")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q must not have a query or fragment", e)
	}
	return u, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
