package credentials

import (
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/containerd"
	"berth/internal/errdefs"
)

func basic(user string) Auth { return Auth{Username: user, Password: user + "-pw"} }

func users(auths []Auth) []string {
	var out []string
	for _, a := range auths {
		out = append(out, a.Username)
	}
	return out
}

func TestKeyringLookup(t *testing.T) {
	tests := []struct {
		name  string
		keys  map[string]string // location → user
		image string
		want  []string
	}{
		{"exact host", map[string]string{"registry.example.com": "u"}, "registry.example.com/app", []string{"u"}},
		{"scheme stripped", map[string]string{"http://registry.example.com": "u"}, "registry.example.com/app", []string{"u"}},
		{"v1 path stripped", map[string]string{"https://registry.example.com/v1/": "u"}, "registry.example.com/app", []string{"u"}},
		{"v2 path stripped, rest kept", map[string]string{"https://registry.example.com/v2/team": "u"}, "registry.example.com/team/app", []string{"u"}},
		{"other host", map[string]string{"registry.example.com": "u"}, "other.example.com/app", nil},
		{"port must match", map[string]string{"registry.example.com:5000": "u"}, "registry.example.com/app", nil},
		{"port matches", map[string]string{"registry.example.com:5000": "u"}, "registry.example.com:5000/app", []string{"u"}},
		{"other port", map[string]string{"registry.example.com:5000": "u"}, "registry.example.com:5001/app", nil},
		{"image port, key without", map[string]string{"127.0.0.1": "u"}, "127.0.0.1:5000/app", nil},
		{"path prefix", map[string]string{"registry.example.com/team": "u"}, "registry.example.com/team/app", []string{"u"}},
		{"path not a prefix", map[string]string{"registry.example.com/team": "u"}, "registry.example.com/other/app", nil},
		{"wildcard subdomain", map[string]string{"*.example.com": "u"}, "registry.example.com/app", []string{"u"}},
		{"wildcard is one label", map[string]string{"*.example.com": "u"}, "a.b.example.com/app", nil},
		{"wildcard needs a label", map[string]string{"*.example.com": "u"}, "example.com/app", nil},
		{"wildcard labels", map[string]string{"*.*.io": "u"}, "registry.example.io/app", []string{"u"}},
		{"partial glob", map[string]string{"reg*.example.com": "u"}, "registry.example.com/app", []string{"u"}},
		{"most specific first", map[string]string{
			"registry.example.com": "host", "registry.example.com/team": "team", "*.example.com": "glob",
		}, "registry.example.com/team/app", []string{"team", "host", "glob"}},
		{"docker hub default", map[string]string{"https://index.docker.io/v1/": "hub"}, "docker.io/library/busybox", []string{"hub"}},
		{"docker hub via index host", map[string]string{"https://index.docker.io/v1/": "hub"}, "index.docker.io/library/busybox", []string{"hub"}},
		{"docker.io key", map[string]string{"docker.io": "dio"}, "docker.io/library/busybox", []string{"dio"}},
		{"docker.io key wins over default", map[string]string{"docker.io": "dio", "index.docker.io": "hub"}, "docker.io/library/busybox", []string{"dio"}},
		{"hub creds not for other registries", map[string]string{"index.docker.io": "hub"}, "quay.io/app", nil},
		{"localhost is not docker hub", map[string]string{"index.docker.io": "hub"}, "localhost/app", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k Keyring
			for loc, user := range tt.keys {
				if !k.Add(loc, basic(user)) {
					t.Fatalf("Add(%q) refused", loc)
				}
			}
			if got := users(k.Lookup(tt.image)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Lookup(%q) = %v, want %v", tt.image, got, tt.want)
			}
		})
	}
}

func TestKeyringKeepsOrderUnderOneLocation(t *testing.T) {
	var k Keyring
	k.Add("registry.example.com", basic("first"))
	k.Add("https://registry.example.com/v1/", basic("second"))
	if got := users(k.Lookup("registry.example.com/app")); !reflect.DeepEqual(got, []string{"first", "second"}) {
		t.Errorf("Lookup = %v", got)
	}
	if k.Len() != 2 {
		t.Errorf("Len = %d", k.Len())
	}
}

func TestRepository(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                              "docker.io/library/busybox",
		"busybox:1.36":                         "docker.io/library/busybox",
		"team/app":                             "docker.io/team/app",
		"docker.io/busybox":                    "docker.io/library/busybox",
		"index.docker.io/team/app:1":           "docker.io/team/app",
		"127.0.0.1:5000/berth/busybox:1":       "127.0.0.1:5000/berth/busybox",
		"registry.example.com/a/b@sha256:abcd": "registry.example.com/a/b",
		"localhost/app:2":                      "localhost/app",
	} {
		if got := Repository(in); got != want {
			t.Errorf("Repository(%q) = %q, want %q", in, got, want)
		}
	}
}

func dockerConfigJSON(name string, auths string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":` + auths + `}`)},
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestFromSecretsAndAuthConfigs(t *testing.T) {
	secrets := []*v1.Secret{
		dockerConfigJSON("json", `{"127.0.0.1:5000": {"auth": "`+b64("alice:pw-a")+`", "username": "ignored"},
			"https://index.docker.io/v1/": {"username": "hub", "password": "pw-h"}}`),
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"},
			Type:       v1.SecretTypeDockercfg,
			Data:       map[string][]byte{v1.DockerConfigKey: []byte(`{"127.0.0.1:5000/team": {"username": "bob", "password": "pw-b"}}`)},
		},
		// Wrong type for its key, and an opaque secret: skipped as the kubelet does.
		{ObjectMeta: metav1.ObjectMeta{Name: "mistyped"}, Type: v1.SecretTypeOpaque,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"127.0.0.1:5000":{"username":"eve"}}}`)}},
	}
	pod, err := FromSecrets(secrets)
	if err != nil {
		t.Fatal(err)
	}
	node, err := FromRegistries(containerd.Registries{
		Mirrors: map[string]containerd.Mirror{"docker.io": {Endpoints: []string{"http://127.0.0.1:6000"}}},
		Configs: map[string]containerd.RegistryConfig{
			"127.0.0.1:5000": {Auth: &containerd.RegistryAuth{Username: "node", Password: "pw-n"}},
			"127.0.0.1:6000": {Auth: &containerd.RegistryAuth{Auth: b64("mirror:pw-m")}},
			"*":              {Auth: &containerd.RegistryAuth{Token: "tok"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	u := Union{pod, node}
	got := u.AuthConfigs("127.0.0.1:5000/team/app:1")
	var gotUsers []string
	for _, a := range got {
		gotUsers = append(gotUsers, a.Username+"/"+a.Password+"/"+a.RegistryToken+"@"+a.ServerAddress)
	}
	want := []string{"bob/pw-b/@", "alice/pw-a/@", "node/pw-n/@https://127.0.0.1:5000", "//tok@"}
	if !reflect.DeepEqual(gotUsers, want) {
		t.Errorf("AuthConfigs(team/app) = %v, want %v", gotUsers, want)
	}
	hub := u.AuthConfigs("busybox")
	var hubUsers []string
	for _, a := range hub {
		hubUsers = append(hubUsers, a.Username+"@"+a.ServerAddress)
	}
	if want := []string{"hub@", "mirror@https://127.0.0.1:6000", "@"}; !reflect.DeepEqual(hubUsers, want) {
		t.Errorf("AuthConfigs(busybox) = %v, want %v", hubUsers, want)
	}
	if got := (Union{pod}).AuthConfigs("quay.io/app"); got != nil {
		t.Errorf("AuthConfigs(quay.io/app) = %v, want none (anonymous)", got)
	}
}

func TestFromSecretsErrorsNameTheSecretNotTheContent(t *testing.T) {
	tests := []struct {
		name   string
		secret *v1.Secret
	}{
		{"bad json", &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Type: v1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths": {"r.io": {"password": "hunter2"`)}}},
		{"auth not base64", dockerConfigJSON("s", `{"r.io": {"auth": "hunter2!!"}}`)},
		{"auth without colon", dockerConfigJSON("s", `{"r.io": {"auth": "`+b64("hunter2")+`"}}`)},
		{"mistyped field", &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Type: v1.SecretTypeDockercfg,
			Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"r.io": {"password": ["hunter2"]}}`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromSecrets([]*v1.Secret{tt.secret})
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("FromSecrets = %v, want ErrInvalidArgument", err)
			}
			if !strings.Contains(err.Error(), "/s:") {
				t.Errorf("error %q does not name the secret", err)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), b64("hunter2")) {
				t.Errorf("error %q reveals the secret", err)
			}
		})
	}
}

func TestCredentialsNeverPrint(t *testing.T) {
	a := Auth{Username: "alice", Password: "hunter2", IdentityToken: "id-hunter2", RegistryToken: "rt-hunter2"}
	k := &Keyring{}
	k.Add("r.io", a)
	for _, s := range []string{
		a.String(), a.GoString(),
		fmt.Sprintf("%v %+v %#v %s", a, a, a, a),
		fmt.Sprintf("%v %+v", []Auth{a}, &a),
		fmt.Sprintf("%v %+v %#v", k.Lookup("r.io/x"), k.Lookup("r.io/x"), k.Lookup("r.io/x")),
	} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "alice") {
			t.Errorf("%q reveals the credential", s)
		}
	}
}
