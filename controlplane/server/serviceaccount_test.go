package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/kubernetes/fake"

	"berth/controlplane/serviceaccount"
	"berth/internal/errdefs"
)

// writeKey writes a new ECDSA private key to dir/name (EC PEM) and returns
// its path and the PEM of its public key.
func writeKey(t *testing.T, dir, name string) (string, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
}

// The issuer defaults to kube-apiserver's usual one and the API audiences
// to the issuers; explicit values are kept.
func TestServiceAccountConfigDefaults(t *testing.T) {
	c := Config{DataDir: "/x"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ServiceAccountIssuers, []string{"https://kubernetes.default.svc.cluster.local"}) ||
		!slices.Equal(c.APIAudiences, c.ServiceAccountIssuers) {
		t.Fatalf("issuers %v audiences %v", c.ServiceAccountIssuers, c.APIAudiences)
	}
	c = Config{DataDir: "/x", ServiceAccountIssuers: []string{"https://berth.example", "legacy-issuer"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.APIAudiences, []string{"https://berth.example", "legacy-issuer"}) {
		t.Fatalf("audiences %v, want the issuers", c.APIAudiences)
	}
	c = Config{DataDir: "/x", ServiceAccountIssuers: []string{"https://berth.example"}, APIAudiences: []string{"a", "b"}}
	if err := c.Validate(); err != nil || !slices.Equal(c.APIAudiences, []string{"a", "b"}) {
		t.Fatalf("explicit audiences: %v %v", c.APIAudiences, err)
	}
}

// Bad issuers, audiences and key files are refused, naming the flag.
func TestServiceAccountConfigRefusesBadValues(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, pubPEM := writeKey(t, dir, "priv.key")
	pubOnly := filepath.Join(dir, "pub.pem")
	if err := os.WriteFile(pubOnly, pubPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, flag string
		c          Config
	}{
		{"http issuer", "--service-account-issuer", Config{ServiceAccountIssuers: []string{"http://berth.example"}}},
		{"issuer without host", "--service-account-issuer", Config{ServiceAccountIssuers: []string{"https://"}}},
		{"empty issuer", "--service-account-issuer", Config{ServiceAccountIssuers: []string{""}}},
		{"issuer with spaces", "--service-account-issuer", Config{ServiceAccountIssuers: []string{" https://berth.example"}}},
		{"issuer twice", "--service-account-issuer", Config{ServiceAccountIssuers: []string{"https://a.example", "https://a.example"}}},
		{"empty audience", "--api-audiences", Config{APIAudiences: []string{"a", ""}}},
		{"missing signing key", "--service-account-signing-key-file", Config{ServiceAccountSigningKeyFile: filepath.Join(dir, "absent.key")}},
		{"public key as signing key", "--service-account-signing-key-file", Config{ServiceAccountSigningKeyFile: pubOnly}},
		{"garbage key file", "--service-account-key-file", Config{ServiceAccountKeyFiles: []string{garbage}}},
		{"missing key file", "--service-account-key-file", Config{ServiceAccountKeyFiles: []string{filepath.Join(dir, "absent.pem")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.DataDir = dir
			err := tc.c.Validate()
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.flag) {
				t.Fatalf("Validate = %v, want ErrInvalidArgument naming %s", err, tc.flag)
			}
		})
	}
}

// New tokens carry the first issuer and are signed with the configured
// key; tokens of the other issuers, signed with a key of a
// --service-account-key-file, are accepted too; other keys are not.
func TestServiceAccountTokensIssuersAndKeys(t *testing.T) {
	dir := t.TempDir()
	signing, _ := writeKey(t, dir, "signing.key")
	oldKey, oldPub := writeKey(t, dir, "old.key")
	oldPubFile := filepath.Join(dir, "old.pub")
	if err := os.WriteFile(oldPubFile, oldPub, 0o600); err != nil {
		t.Fatal(err)
	}
	strangerKey, _ := writeKey(t, dir, "stranger.key")
	c := Config{DataDir: dir, ServiceAccountIssuers: []string{"https://new.example", "https://old.example"},
		ServiceAccountSigningKeyFile: signing, ServiceAccountKeyFiles: []string{oldPubFile}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	tokens, err := newServiceAccountTokens(&c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, serviceaccount.KeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("DATA-DIR/%s written although a signing key file is configured: %v", serviceaccount.KeyFile, err)
	}
	if tokens.issuer.Issuer() != "https://new.example" || !slices.Equal(tokens.tokenRequest().APIAudiences, c.ServiceAccountIssuers) {
		t.Fatalf("issuer %q, token request audiences %v", tokens.issuer.Issuer(), tokens.tokenRequest().APIAudiences)
	}

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "sa-uid"}}
	auth, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Keys: tokens.keys, Issuers: tokens.issuers, APIAudiences: tokens.audiences,
		Getter: serviceaccount.ClientGetter{Client: fake.NewClientset(sa)},
	})
	if err != nil {
		t.Fatal(err)
	}
	issue := func(keyFile, iss string) string {
		t.Helper()
		key, err := loadSigningKey(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		issuer, err := serviceaccount.NewIssuer(serviceaccount.IssuerConfig{Key: key, Issuer: iss})
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := issuer.Issue(serviceaccount.TokenSpec{ServiceAccount: sa, Audiences: []string{iss}, Lifetime: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ctx := authenticator.WithAudiences(context.Background(), nil)
	for _, tc := range []struct {
		name, key, iss string
		ok             bool
	}{
		{"current key and issuer", signing, "https://new.example", true},
		{"old key and issuer", oldKey, "https://old.example", true},
		{"an unknown key", strangerKey, "https://new.example", false},
	} {
		resp, ok, err := auth.AuthenticateToken(ctx, issue(tc.key, tc.iss))
		if ok != tc.ok {
			t.Errorf("%s: ok %v (%v), want %v", tc.name, ok, err, tc.ok)
		}
		if ok && resp.User.GetName() != "system:serviceaccount:ns:app" {
			t.Errorf("%s: user %q", tc.name, resp.User.GetName())
		}
	}

	// Without a signing key file, DATA-DIR/sa.key is generated and reused.
	d := Config{DataDir: t.TempDir()}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	first, err := newServiceAccountTokens(&d)
	if err != nil {
		t.Fatal(err)
	}
	second, err := newServiceAccountTokens(&d)
	if err != nil {
		t.Fatal(err)
	}
	if !first.issuer.PublicKey().(*ecdsa.PublicKey).Equal(second.issuer.PublicKey()) || len(first.keys) != 1 {
		t.Fatal("DATA-DIR/sa.key not reused")
	}
	if _, err := os.Stat(filepath.Join(d.DataDir, serviceaccount.KeyFile)); err != nil {
		t.Fatal(err)
	}
}
