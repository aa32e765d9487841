package credentials

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"berth/internal/containerd"
	"berth/internal/errdefs"
)

// dockerConfigEntry is one "auths" entry of a docker config.
type dockerConfigEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	Email         string `json:"email,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// FromSecrets builds the keyring of a pod's image pull secrets, in the
// order given: kubernetes.io/dockerconfigjson secrets (".dockerconfigjson":
// {"auths": {LOCATION: ENTRY}}) and kubernetes.io/dockercfg secrets
// (".dockercfg": {LOCATION: ENTRY}); an entry's "auth" (base64
// "user:password") takes precedence over its username and password. Secrets
// of other types, or without their key, are skipped as the kubelet does. A
// malformed secret is an error naming the secret and the key, never the
// content; it wraps errdefs.ErrInvalidArgument.
func FromSecrets(secrets []*v1.Secret) (*Keyring, error) {
	k := &Keyring{}
	for _, s := range secrets {
		if s == nil {
			continue
		}
		var (
			key     string
			entries map[string]dockerConfigEntry
		)
		switch {
		case s.Type == v1.SecretTypeDockerConfigJson && len(s.Data[v1.DockerConfigJsonKey]) > 0:
			key = v1.DockerConfigJsonKey
			var cfg struct {
				Auths map[string]dockerConfigEntry `json:"auths"`
			}
			if err := json.Unmarshal(s.Data[key], &cfg); err != nil {
				return nil, secretError(s, key, "not a docker config JSON", err)
			}
			entries = cfg.Auths
		case s.Type == v1.SecretTypeDockercfg && len(s.Data[v1.DockerConfigKey]) > 0:
			key = v1.DockerConfigKey
			if err := json.Unmarshal(s.Data[key], &entries); err != nil {
				return nil, secretError(s, key, "not a dockercfg JSON object", err)
			}
		default:
			continue
		}
		for _, loc := range sortedLocations(entries) {
			auth, err := entryAuth(entries[loc])
			if err != nil {
				return nil, secretError(s, key, fmt.Sprintf("entry %q: %v", loc, err), nil)
			}
			// A location that is not a URL is skipped, as the kubelet does.
			k.Add(loc, auth)
		}
	}
	return k, nil
}

// secretError names the secret and key; err's text is left out when it
// could quote the secret's content (JSON syntax errors do not, type
// errors name only Go types and offsets), so only its class is kept.
func secretError(s *v1.Secret, key, what string, err error) error {
	msg := fmt.Sprintf("image pull secret %s/%s: %s: %s", s.Namespace, s.Name, key, what)
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		msg += fmt.Sprintf(" (syntax error at byte %d)", syn.Offset)
	}
	return fmt.Errorf("%s: %w", msg, errdefs.ErrInvalidArgument)
}

func entryAuth(e dockerConfigEntry) (Auth, error) {
	a := Auth{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
	if e.Auth == "" {
		return a, nil
	}
	user, pass, err := decodeAuth(e.Auth)
	if err != nil {
		return Auth{}, err
	}
	a.Username, a.Password = user, pass
	return a, nil
}

// decodeAuth splits base64("user:password"). Its errors never quote the
// value.
func decodeAuth(s string) (string, string, error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", "", errors.New(`"auth" is not valid base64`)
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", errors.New(`"auth" must be base64 of "username:password"`)
	}
	return user, strings.Trim(pass, "\x00"), nil
}

func sortedLocations(m map[string]dockerConfigEntry) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Add sorts its index; the order here only decides the order of
	// several credentials under one normalized location.
	sortStrings(keys)
	return keys
}

// FromRegistries builds the keyring of a registries file's credentials:
// configs[HOST].auth is filed under HOST and under every registry that
// HOST mirrors (mirrors[REG].endpoint naming HOST), limited to HOST through
// ServerAddress so containerd sends it nowhere else; configs["*"].auth
// applies to every image. It is the node's source, below the pod's secrets.
func FromRegistries(r containerd.Registries) (*Keyring, error) {
	k := &Keyring{}
	for _, host := range sortedConfigHosts(r.Configs) {
		ra := r.Configs[host].Auth
		if ra == nil {
			continue
		}
		auth := Auth{Username: ra.Username, Password: ra.Password, IdentityToken: ra.IdentityToken, RegistryToken: ra.Token}
		if ra.Auth != "" {
			user, pass, err := decodeAuth(ra.Auth)
			if err != nil {
				return nil, fmt.Errorf("registries: configs[%q].auth.auth: %v: %w", host, err, errdefs.ErrInvalidArgument)
			}
			auth.Username, auth.Password = user, pass
		}
		if host == containerd.Wildcard {
			k.wildcard = append(k.wildcard, auth)
			continue
		}
		auth.ServerAddress = "https://" + host
		k.Add(host, auth)
		for _, reg := range sortedMirrorNames(r.Mirrors) {
			if reg == host {
				continue
			}
			for _, e := range r.Mirrors[reg].Endpoints {
				if u, err := containerd.ParseEndpoint(e); err == nil && u.Host == host {
					if reg == containerd.Wildcard {
						k.wildcard = append(k.wildcard, auth)
					} else {
						k.Add(reg, auth)
					}
					break
				}
			}
		}
	}
	return k, nil
}
