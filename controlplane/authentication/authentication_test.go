package authentication

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"berth/internal/errdefs"
)

var now = time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

// secretStore is a SecretGetter over a map, answering NotFound as the
// apiserver's stores do.
type secretStore map[string]*corev1.Secret

func (s secretStore) get(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	if sec, ok := s[namespace+"/"+name]; ok {
		return sec, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (s secretStore) add(t *testing.T, token string, expires time.Time, mutate func(*corev1.Secret), groups ...string) {
	t.Helper()
	sec, err := BootstrapTokenSecret(token, "test", expires, groups...)
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(sec)
	}
	s[sec.Namespace+"/"+sec.Name] = sec
}

func TestParseTokenFile(t *testing.T) {
	good := `# comment
tok1,alice,uid-1,"devs,ops"
tok2,bob,uid-2
`
	st, err := ParseTokenFile("tokens.csv", strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	resp, ok, err := st.AuthenticateToken(context.Background(), "tok1")
	if err != nil || !ok || resp.User.GetName() != "alice" || resp.User.GetUID() != "uid-1" || !slices.Equal(resp.User.GetGroups(), []string{"devs", "ops"}) {
		t.Fatalf("tok1: %+v %v %v", resp, ok, err)
	}
	if resp, ok, _ := st.AuthenticateToken(context.Background(), "tok2"); !ok || resp.User.GetName() != "bob" || len(resp.User.GetGroups()) != 0 {
		t.Fatalf("tok2: %+v %v", resp, ok)
	}
	for _, tok := range []string{"tok", "tok1x", ""} {
		if _, ok, err := st.AuthenticateToken(context.Background(), tok); ok || err != nil {
			t.Errorf("token %q: ok %v err %v, want no opinion", tok, ok, err)
		}
	}

	bad := []struct{ content, want string }{
		{"tok1,alice\n", "line 1: want token,user,uid"},
		{"tok1,alice,\n", "line 1: uid is empty"},
		{",alice,u\n", "line 1: token is empty"},
		{"tok1,alice,u1\ntok1,bob,u2\n", "line 2: token already listed on line 1"},
		{"a,b,c,d,e\n", "line 1: want token,user,uid"},
	}
	for _, b := range bad {
		_, err := ParseTokenFile("tokens.csv", strings.NewReader(b.content))
		if err == nil || !strings.Contains(err.Error(), b.want) || !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%q: %v, want an invalid-argument error containing %q", b.content, err, b.want)
		}
	}
	if _, err := LoadTokenFile(filepath.Join(t.TempDir(), "missing.csv")); err == nil {
		t.Error("missing token file accepted")
	}
}

func TestBootstrapTokenAuthenticator(t *testing.T) {
	store := secretStore{}
	store.add(t, "abcdef.0123456789abcdef", time.Time{}, nil)
	store.add(t, "expird.0123456789abcdef", now.Add(-time.Second), nil)
	store.add(t, "future.0123456789abcdef", now.Add(time.Hour), nil, "system:bootstrappers:workers")
	store.add(t, "nouse0.0123456789abcdef", time.Time{}, func(s *corev1.Secret) { s.Data[BootstrapTokenUsageAuthKey] = []byte("false") })
	store.add(t, "opaque.0123456789abcdef", time.Time{}, func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque })
	store.add(t, "gone00.0123456789abcdef", time.Time{}, func(s *corev1.Secret) { s.DeletionTimestamp = &metav1.Time{Time: now} })
	store.add(t, "badgrp.0123456789abcdef", time.Time{}, func(s *corev1.Secret) { s.Data[BootstrapTokenExtraGroupsKey] = []byte("system:masters") })
	a := &BootstrapTokenAuthenticator{Secrets: store.get, Now: clock}

	resp, ok, err := a.AuthenticateToken(context.Background(), "abcdef.0123456789abcdef")
	if err != nil || !ok || resp.User.GetName() != "system:bootstrap:abcdef" || !slices.Equal(resp.User.GetGroups(), []string{"system:bootstrappers"}) {
		t.Fatalf("valid token: %+v %v %v", resp, ok, err)
	}
	resp, ok, _ = a.AuthenticateToken(context.Background(), "future.0123456789abcdef")
	if !ok || !slices.Equal(resp.User.GetGroups(), []string{"system:bootstrappers", "system:bootstrappers:workers"}) {
		t.Fatalf("token with extra groups: %+v %v", resp, ok)
	}
	for _, tok := range []string{
		"abcdef.0123456789abcdee", // wrong secret
		"expird.0123456789abcdef", // expired
		"nouse0.0123456789abcdef", // not for authentication
		"opaque.0123456789abcdef", // not a bootstrap token secret
		"gone00.0123456789abcdef", // being deleted
		"badgrp.0123456789abcdef", // extra group outside system:bootstrappers:
		"nosuch.0123456789abcdef", // no secret
		"ABCDEF.0123456789abcdef", // not the token format
		"abcdef0123456789abcdef",
	} {
		if _, ok, err := a.AuthenticateToken(context.Background(), tok); ok || err != nil {
			t.Errorf("%s: ok %v err %v, want refused without error", tok, ok, err)
		}
	}
	failing := &BootstrapTokenAuthenticator{Secrets: func(context.Context, string, string) (*corev1.Secret, error) {
		return nil, errors.New("etcd down")
	}}
	if _, ok, err := failing.AuthenticateToken(context.Background(), "abcdef.0123456789abcdef"); ok || err == nil {
		t.Errorf("store failure: ok %v err %v, want an error", ok, err)
	}
}

func TestBootstrapTokenHelpers(t *testing.T) {
	tok, err := GenerateBootstrapToken()
	if err != nil {
		t.Fatal(err)
	}
	id, secret, err := ParseBootstrapToken(tok)
	if err != nil || len(id) != 6 || len(secret) != 16 {
		t.Fatalf("generated %q: %q %q %v", tok, id, secret, err)
	}
	sec, err := BootstrapTokenSecret(tok, "join", now.Add(time.Hour), "system:bootstrappers:x")
	if err != nil {
		t.Fatal(err)
	}
	if sec.Name != "bootstrap-token-"+id || sec.Namespace != "kube-system" || sec.Type != "bootstrap.kubernetes.io/token" ||
		string(sec.Data["token-id"]) != id || string(sec.Data["token-secret"]) != secret ||
		string(sec.Data["usage-bootstrap-authentication"]) != "true" || string(sec.Data["expiration"]) != "2026-11-22T05:00:00Z" ||
		string(sec.Data["auth-extra-groups"]) != "system:bootstrappers:x" {
		t.Fatalf("secret %+v", sec)
	}
	if _, err := BootstrapTokenSecret(tok, "", time.Time{}, "admins"); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("extra group outside system:bootstrappers: %v", err)
	}
	if _, _, err := ParseBootstrapToken("abc.def"); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("malformed token: %v", err)
	}
}

// testCA is a CA and a way to issue client certificates from it.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) issue(t *testing.T, subject pkix.Name, usage x509.ExtKeyUsage) *x509.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: subject, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

func withCert(r *http.Request, c *x509.Certificate) *http.Request {
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
	return r
}

func TestClientCertAuthenticator(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	a := &ClientCertAuthenticator{Roots: ca.pool, Now: clock}
	req := func() *http.Request { return httptest.NewRequest(http.MethodGet, "/api", nil) }

	resp, ok, err := a.AuthenticateRequest(withCert(req(), ca.issue(t, pkix.Name{CommonName: "alice", Organization: []string{"devs", "ops"}}, x509.ExtKeyUsageClientAuth)))
	if err != nil || !ok || resp.User.GetName() != "alice" || !slices.Equal(slices.Sorted(slices.Values(resp.User.GetGroups())), []string{"devs", "ops"}) {
		t.Fatalf("good certificate: %+v %v %v", resp.User, ok, err)
	}
	if _, ok, err := a.AuthenticateRequest(req()); ok || err != nil {
		t.Fatalf("no certificate: ok %v err %v, want no opinion", ok, err)
	}
	for name, c := range map[string]*x509.Certificate{
		"other CA":       other.issue(t, pkix.Name{CommonName: "mallory"}, x509.ExtKeyUsageClientAuth),
		"server usage":   ca.issue(t, pkix.Name{CommonName: "alice"}, x509.ExtKeyUsageServerAuth),
		"no common name": ca.issue(t, pkix.Name{Organization: []string{"devs"}}, x509.ExtKeyUsageClientAuth),
	} {
		if _, ok, err := a.AuthenticateRequest(withCert(req(), c)); ok || !errors.Is(err, errdefs.ErrUnauthenticated) {
			t.Errorf("%s: ok %v err %v, want refused", name, ok, err)
		}
	}
	expired := &ClientCertAuthenticator{Roots: ca.pool, Now: func() time.Time { return now.Add(2 * time.Hour) }}
	if _, ok, err := expired.AuthenticateRequest(withCert(req(), ca.issue(t, pkix.Name{CommonName: "alice"}, x509.ExtKeyUsageClientAuth))); ok || err == nil {
		t.Errorf("expired certificate: ok %v err %v, want refused", ok, err)
	}
}

// audienceToken accepts "sa-token" for audience "api" only, as a
// service-account authenticator does, and reports its audiences.
var audienceToken = authenticator.TokenFunc(func(ctx context.Context, tok string) (*authenticator.Response, bool, error) {
	if tok != "sa-token" {
		return nil, false, nil
	}
	auds, _ := authenticator.AudiencesFrom(ctx)
	if len(auds) > 0 && !auds.Has("api") {
		return nil, false, errors.New("token audiences [api] do not match")
	}
	return &authenticator.Response{Audiences: authenticator.Audiences{"api"}, User: &user.DefaultInfo{
		Name: "system:serviceaccount:ns:sa", Groups: []string{"system:serviceaccounts", "system:authenticated"}}}, true, nil
})

func TestChain(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte("static-token,carol,uid-c,admins\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := secretStore{}
	store.add(t, "abcdef.0123456789abcdef", time.Time{}, nil)
	cfg := Config{ClientCA: ca.pool, TokenAuthFile: tokenFile, BootstrapTokens: store.get,
		Tokens: []authenticator.Token{audienceToken}, APIAudiences: authenticator.Audiences{"api"}, Now: clock}
	closed, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Anonymous = true
	open, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bearer := func(tok string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		return r
	}
	for _, a := range []*Authenticator{closed, open} {
		for tok, want := range map[string]string{"static-token": "carol", "abcdef.0123456789abcdef": "system:bootstrap:abcdef", "sa-token": "system:serviceaccount:ns:sa"} {
			u, ok := a.Authenticate(bearer(tok))
			if !ok || u.GetName() != want || !slices.Contains(u.GetGroups(), user.AllAuthenticated) {
				t.Errorf("token %s: %v %v, want %s in system:authenticated", tok, u, ok, want)
			}
			if n := countOf(u.GetGroups(), user.AllAuthenticated); n != 1 {
				t.Errorf("token %s: system:authenticated listed %d times", tok, n)
			}
		}
		cert := ca.issue(t, pkix.Name{CommonName: "dave", Organization: []string{"ops"}}, x509.ExtKeyUsageClientAuth)
		if u, ok := a.Authenticate(withCert(bearer(""), cert)); !ok || u.GetName() != "dave" || !slices.Equal(u.GetGroups(), []string{"ops", user.AllAuthenticated}) {
			t.Errorf("certificate: %v %v", u, ok)
		}
		// A credential that fails is refused, anonymous or not.
		if u, ok := a.Authenticate(bearer("wrong")); ok {
			t.Errorf("wrong token authenticated as %v", u)
		}
	}
	if u, ok := closed.Authenticate(bearer("")); ok {
		t.Errorf("no credential without --anonymous-auth: authenticated as %v", u)
	}
	u, ok := open.Authenticate(bearer(""))
	if !ok || u.GetName() != user.Anonymous || !slices.Equal(u.GetGroups(), []string{user.AllUnauthenticated}) {
		t.Errorf("no credential with --anonymous-auth: %v %v, want system:anonymous", u, ok)
	}

	// TokenReview's path: bare tokens, audiences from the context.
	resp, ok, err := closed.AuthenticateToken(authenticator.WithAudiences(context.Background(), authenticator.Audiences{"api"}), "abcdef.0123456789abcdef")
	if err != nil || !ok || resp.User.GetName() != "system:bootstrap:abcdef" || !slices.Equal(resp.Audiences, authenticator.Audiences{"api"}) ||
		!slices.Contains(resp.User.GetGroups(), user.AllAuthenticated) {
		t.Fatalf("token review of a bootstrap token: %+v %v %v", resp, ok, err)
	}
	if _, ok, _ := closed.AuthenticateToken(authenticator.WithAudiences(context.Background(), authenticator.Audiences{"vault"}), "static-token"); ok {
		t.Fatal("static token accepted for another audience")
	}
	if _, ok, _ := closed.AuthenticateToken(authenticator.WithAudiences(context.Background(), authenticator.Audiences{"vault"}), "sa-token"); ok {
		t.Fatal("service-account token accepted for another audience")
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(Config{Tokens: []authenticator.Token{nil}}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("nil token authenticator: %v", err)
	}
	if _, err := New(Config{TokenAuthFile: filepath.Join(t.TempDir(), "none.csv")}); err == nil {
		t.Fatal("missing token file accepted")
	}
}
