package credentials

import (
	"errors"
	"regexp"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/errdefs"
)

// plainLocation is a registry location as image references spell them.
var plainLocation = regexp.MustCompile(`^[a-z0-9-]+(\.[a-z0-9-]+)*(:[0-9]+)?(/[a-z0-9._-]+)*$`)

// FuzzFromSecrets feeds arbitrary .dockerconfigjson and .dockercfg
// contents to FromSecrets. A refused secret is an ErrInvalidArgument
// naming the secret and key; an accepted one yields credentials that are
// all found again by looking up their own registry.
func FuzzFromSecrets(f *testing.F) {
	for _, s := range []string{
		`{"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNz"}}}`,
		`{"auths":{"https://index.docker.io/v1/":{"username":"u","password":"p"},"*.example.com:5000/x":{"identitytoken":"t"}}}`,
		`{"registry.example.com":{"auth":"dXNlcjpwYXNz","email":"e"}}`,
		`{"auths":{"r":{"auth":"!!"}}}`,
		`{"auths":{"r":{"auth":"dXNlcg=="}}}`,
		`{"auths":[]}`,
		`[`,
		``,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, configJSON bool) {
		s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pull"}}
		if configJSON {
			s.Type, s.Data = v1.SecretTypeDockerConfigJson, map[string][]byte{v1.DockerConfigJsonKey: data}
		} else {
			s.Type, s.Data = v1.SecretTypeDockercfg, map[string][]byte{v1.DockerConfigKey: data}
		}
		k, err := FromSecrets([]*v1.Secret{s})
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("FromSecrets: %v does not wrap ErrInvalidArgument", err)
			}
			if want := "image pull secret ns/pull: "; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
				t.Fatalf("FromSecrets: %v does not name the secret", err)
			}
			return
		}
		if k == nil {
			t.Fatal("FromSecrets: nil keyring without an error")
		}
		for _, loc := range k.index {
			if !plainLocation.MatchString(loc) {
				continue // a glob or a name no image reference has
			}
			if got, want := len(k.Lookup(loc+"/image")), len(k.creds[loc]); got < want {
				t.Fatalf("location %q holds %d credentials, a lookup of its image finds %d", loc, want, got)
			}
		}
	})
}
