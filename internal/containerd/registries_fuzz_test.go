package containerd

import (
	"errors"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"berth/internal/errdefs"
)

// FuzzParseRegistries feeds arbitrary registries files to
// ParseRegistries. A refused file is an ErrInvalidArgument; an accepted one survives YAML encode → parse
// unchanged and renders to containerd hosts files.
func FuzzParseRegistries(f *testing.F) {
	for _, s := range []string{
		"mirrors:\n  docker.io:\n    endpoint: [\"http://127.0.0.1:5000\"]\nconfigs:\n  \"127.0.0.1:5000\":\n    auth: {username: puller, password: secret}\n    tls: {insecure_skip_verify: true, ca_file: /etc/ssl/ca.pem}\n",
		"mirrors:\n  \"*\":\n    endpoint: [\"https://mirror.example.com/v2\", \"mirror2:5000\"]\n",
		"configs:\n  \"*\":\n    auth: {auth: dXNlcjpwYXNz}\n",
		"mirrors:\n  docker.io:\n    endpoint: [\"ftp://x\"]\n",
		"mirrors:\n  docker.io:\n    endpoints: [\"http://x\"]\n",
		`{"configs":{"r:5000":{"auth":{"token":"t","identity_token":"i"},"tls":{"cert_file":"c","key_file":"k"}}}}`,
		"",
		"[",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRegistries(data)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("ParseRegistries: %v does not wrap ErrInvalidArgument", err)
			}
			return
		}
		out, err := yaml.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseRegistries(out)
		if err != nil {
			t.Fatalf("the accepted file, re-encoded as\n%s\ndoes not parse: %v", out, err)
		}
		if !reflect.DeepEqual(normalize(r), normalize(again)) {
			t.Fatalf("encode → parse changed the registries: %#v, then %#v", r, again)
		}
		if _, err := HostsFiles(r); err != nil {
			t.Fatalf("HostsFiles of accepted registries: %v", err)
		}
	})
}

// normalize treats empty maps and lists as absent (omitempty drops them).
func normalize(r Registries) Registries {
	if len(r.Mirrors) == 0 {
		r.Mirrors = nil
	}
	if len(r.Configs) == 0 {
		r.Configs = nil
	}
	for k, m := range r.Mirrors {
		if len(m.Endpoints) == 0 {
			m.Endpoints = nil
		}
		r.Mirrors[k] = m
	}
	return r
}
