// Package credentials is the agent's image pull credential keyring, as the
// kubelet's (pkg/credentialprovider): a pod's imagePullSecrets
// (kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg) are parsed
// into entries keyed by registry location ("host[:port][/path]", wildcards
// such as "*.example.com" allowed per host label), and an image is matched
// to them — same port, same number of host labels each matching its glob,
// the key's path a prefix of the image's — most specific key first (keys
// sorted in reverse), docker.io images also matching "index.docker.io"
// credentials. The registries file's credentials are a second, lower
// priority source, as the kubelet's node-wide keyring is after the pod's
// secrets.
//
// Credentials never appear in errors, String or log output.
package credentials

import (
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/internal/containerd"
)

// Auth is one credential. Its String and GoString redact the secrets.
type Auth struct {
	Username, Password string
	// IdentityToken and RegistryToken are CRI's token fields.
	IdentityToken, RegistryToken string
	// ServerAddress, when set, limits the credential to that registry host
	// (containerd sends it to no other); a URL such as https://HOST.
	ServerAddress string
}

// String names the credential's kind, never its content.
func (a Auth) String() string {
	switch {
	case a.Username != "":
		return "Auth{basic, redacted}"
	case a.IdentityToken != "" || a.RegistryToken != "":
		return "Auth{token, redacted}"
	default:
		return "Auth{anonymous}"
	}
}

// GoString keeps %#v from printing the secrets.
func (a Auth) GoString() string { return a.String() }

// CRI is the credential as CRI PullImage takes it.
func (a Auth) CRI() *runtimeapi.AuthConfig {
	return &runtimeapi.AuthConfig{
		Username: a.Username, Password: a.Password,
		IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
		ServerAddress: a.ServerAddress,
	}
}

// Keyring holds credentials by registry location. The zero value is empty
// and usable; Add is not safe for concurrent use with Lookup.
type Keyring struct {
	index []string          // keys, sorted in reverse: most specific first
	creds map[string][]Auth // by key, in the order added
	// wildcard credentials (a registries file's "*") match every image,
	// after every located match.
	wildcard []Auth
}

// defaultRegistryHost is the key Docker Hub credentials are filed under
// ("https://index.docker.io/v1/" in a docker config).
const defaultRegistryHost = "index.docker.io"

// Add files auth under location: a docker config key such as
// "https://index.docker.io/v1/", "registry.example.com:5000/team",
// "*.example.com". The scheme is dropped and a leading /v1/ or /v2/ path
// segment removed. It reports false (and adds nothing) for a location that
// is not a URL.
func (k *Keyring) Add(location string, auth Auth) bool {
	key, ok := normalizeLocation(location)
	if !ok {
		return false
	}
	if k.creds == nil {
		k.creds = map[string][]Auth{}
	}
	if _, seen := k.creds[key]; !seen {
		k.index = append(k.index, key)
		sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
	}
	k.creds[key] = append(k.creds[key], auth)
	return true
}

func normalizeLocation(location string) (string, bool) {
	value := location
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	u, err := url.Parse(value)
	if err != nil || u.Host == "" {
		return "", false
	}
	path := u.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path != "" && path != "/" {
		return u.Host + path, true
	}
	return u.Host, true
}

// Lookup returns the credentials whose location matches image (a
// reference without scheme, e.g. "docker.io/library/busybox" or
// "127.0.0.1:5000/team/app:1"), most specific location first. When none
// matches and image is on Docker Hub, the index.docker.io credentials.
func (k *Keyring) Lookup(image string) []Auth {
	var out []Auth
	for _, key := range k.index {
		if urlsMatch(key, image) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(image) {
		out = append(out, k.creds[defaultRegistryHost]...)
	}
	return append(out, k.wildcard...)
}

// Len is the number of credentials held.
func (k *Keyring) Len() int {
	n := len(k.wildcard)
	for _, c := range k.creds {
		n += len(c)
	}
	return n
}

// isDockerHub reports whether image would be pulled from Docker Hub: no
// registry host in its first component ("busybox", "library/busybox"),
// or docker.io / index.docker.io.
func isDockerHub(image string) bool {
	first, _, hasSlash := strings.Cut(image, "/")
	if first == "" {
		return false
	}
	if !hasSlash {
		return true
	}
	if first == "docker.io" || first == defaultRegistryHost {
		return true
	}
	return !strings.ContainsAny(first, ".:") && first != "localhost"
}

// urlsMatch reports whether target (a schemeless image location) matches
// glob (a keyring key): same port, same number of host labels each matching
// its glob (filepath.Match, so "*" is one label), and glob's path a prefix
// of target's.
func urlsMatch(glob, target string) bool {
	g, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gLabels, gPort := splitHost(g.Host)
	tLabels, tPort := splitHost(t.Host)
	if gPort != tPort || len(gLabels) != len(tLabels) {
		return false
	}
	if !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i, pattern := range gLabels {
		if ok, err := filepath.Match(pattern, tLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// Union looks images up in each keyring in turn and concatenates what they
// hold: the pod's pull secrets first, then the node's lower-priority
// sources.
type Union []*Keyring

// Lookup returns the matches of every keyring, in the keyrings' order.
func (u Union) Lookup(image string) []Auth {
	var out []Auth
	for _, k := range u {
		if k != nil {
			out = append(out, k.Lookup(image)...)
		}
	}
	return out
}

// AuthConfigs returns the CRI credentials to try, in order, for pulling
// image; nil means pull anonymously. image is normalized first (a bare
// "busybox" is "docker.io/library/busybox"); the tag and digest do not
// take part in matching.
func (u Union) AuthConfigs(image string) []*runtimeapi.AuthConfig {
	var out []*runtimeapi.AuthConfig
	for _, a := range u.Lookup(Repository(image)) {
		out = append(out, a.CRI())
	}
	return out
}

// Repository is image without tag or digest, normalized as the kubelet
// does before a lookup: a first component without '.' or ':' (and not
// "localhost") is a Docker Hub repository ("busybox" is
// "docker.io/library/busybox").
func Repository(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	first, rest, hasSlash := strings.Cut(name, "/")
	switch {
	case first == "docker.io" || first == defaultRegistryHost:
		name = rest
	case hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost"):
		return name
	}
	if !strings.Contains(name, "/") {
		name = "library/" + name
	}
	return "docker.io/" + name
}

func sortStrings(s []string) { sort.Strings(s) }

func sortedConfigHosts(m map[string]containerd.RegistryConfig) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedMirrorNames(m map[string]containerd.Mirror) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
