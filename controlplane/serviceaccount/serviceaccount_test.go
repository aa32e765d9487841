package serviceaccount

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
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
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"berth/internal/errdefs"
)

var (
	sa  = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "builder", UID: "sa-uid"}}
	pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "pod-uid"},
		Spec: corev1.PodSpec{ServiceAccountName: "builder", NodeName: "node-a"}}
	node   = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
	secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "tok", UID: "secret-uid"}}
)

type fixture struct {
	clock  *clocktesting.FakeClock
	client *fake.Clientset
	issuer *Issuer
	auth   authenticator.Token
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	key, err := EnsureKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	f.client = fake.NewClientset(sa.DeepCopy(), pod.DeepCopy(), node.DeepCopy(), secret.DeepCopy())
	if f.issuer, err = NewIssuer(IssuerConfig{Key: key, Clock: f.clock}); err != nil {
		t.Fatal(err)
	}
	if f.auth, err = NewAuthenticator(AuthenticatorConfig{Keys: []crypto.PublicKey{f.issuer.PublicKey()}, Getter: ClientGetter{Client: f.client}, Clock: f.clock}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) issue(t *testing.T, spec TokenSpec) string {
	t.Helper()
	if spec.ServiceAccount == nil {
		spec.ServiceAccount = sa
	}
	if spec.Audiences == nil {
		spec.Audiences = []string{DefaultIssuer}
	}
	if spec.Lifetime == 0 {
		spec.Lifetime = time.Hour
	}
	tok, exp, err := f.issuer.Issue(spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := f.clock.Now().Add(spec.Lifetime); !exp.Equal(want) {
		t.Fatalf("expiry %s, want %s", exp, want)
	}
	return tok
}

// refused checks the token is refused as unauthenticated, naming why.
func refused(t *testing.T, a authenticator.Token, ctx context.Context, tok, why string) {
	t.Helper()
	resp, ok, err := a.AuthenticateToken(ctx, tok)
	if ok || resp != nil {
		t.Fatalf("token accepted as %v, want refused (%s)", resp.User, why)
	}
	if !errors.Is(err, errdefs.ErrUnauthenticated) || !strings.Contains(err.Error(), why) {
		t.Fatalf("error %v, want ErrUnauthenticated mentioning %q", err, why)
	}
}

func TestPodBoundTokenAuthenticates(t *testing.T) {
	f := newFixture(t)
	tok := f.issue(t, TokenSpec{Pod: pod, Node: node})
	resp, ok, err := f.auth.AuthenticateToken(context.Background(), tok)
	if err != nil || !ok {
		t.Fatalf("AuthenticateToken: ok %v, err %v", ok, err)
	}
	u := resp.User
	if u.GetName() != "system:serviceaccount:team:builder" || u.GetUID() != "sa-uid" {
		t.Errorf("user %q uid %q", u.GetName(), u.GetUID())
	}
	wantGroups := []string{"system:serviceaccounts", "system:serviceaccounts:team", user.AllAuthenticated}
	if !slices.Equal(u.GetGroups(), wantGroups) {
		t.Errorf("groups %v, want %v", u.GetGroups(), wantGroups)
	}
	extra := u.GetExtra()
	for k, v := range map[string]string{ExtraPodName: "web", ExtraPodUID: "pod-uid", ExtraNodeName: "node-a", ExtraNodeUID: "node-uid"} {
		if !slices.Equal(extra[k], []string{v}) {
			t.Errorf("extra %s = %v, want [%s]", k, extra[k], v)
		}
	}
	if c := extra[ExtraCredentialID]; len(c) != 1 || !strings.HasPrefix(c[0], "JTI=") {
		t.Errorf("extra %s = %v, want JTI=<id>", ExtraCredentialID, c)
	}
	if !slices.Equal([]string(resp.Audiences), []string{DefaultIssuer}) {
		t.Errorf("audiences %v", resp.Audiences)
	}
}

// TestClaims decodes the payload: upstream's claim names and values.
func TestClaims(t *testing.T) {
	f := newFixture(t)
	tok := f.issue(t, TokenSpec{Pod: pod, Node: node, Lifetime: 365 * 24 * time.Hour, WarnAfter: 3607 * time.Second})
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	header, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var h map[string]any
	if err := json.Unmarshal(header, &h); err != nil {
		t.Fatal(err)
	}
	kid, _ := KeyID(f.issuer.PublicKey())
	if h["alg"] != "ES256" || h["kid"] != kid {
		t.Errorf("header %v, want alg ES256 kid %s", h, kid)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Iss           string   `json:"iss"`
		Sub           string   `json:"sub"`
		Aud           []string `json:"aud"`
		Exp, Iat, Nbf int64
		Jti           string `json:"jti"`
		K             struct {
			Namespace      string            `json:"namespace"`
			ServiceAccount map[string]string `json:"serviceaccount"`
			Pod            map[string]string `json:"pod"`
			Node           map[string]string `json:"node"`
			WarnAfter      int64             `json:"warnafter"`
		} `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now().Unix()
	if c.Iss != DefaultIssuer || c.Sub != "system:serviceaccount:team:builder" || !slices.Equal(c.Aud, []string{DefaultIssuer}) || c.Jti == "" {
		t.Errorf("claims %+v", c)
	}
	if c.Iat != now || c.Nbf != now || c.Exp != now+365*24*3600 || c.K.WarnAfter != now+3607 {
		t.Errorf("times iat %d nbf %d exp %d warnafter %d, issued at %d", c.Iat, c.Nbf, c.Exp, c.K.WarnAfter, now)
	}
	if c.K.Namespace != "team" || c.K.ServiceAccount["name"] != "builder" || c.K.ServiceAccount["uid"] != "sa-uid" ||
		c.K.Pod["name"] != "web" || c.K.Pod["uid"] != "pod-uid" || c.K.Node["name"] != "node-a" || c.K.Node["uid"] != "node-uid" {
		t.Errorf("kubernetes.io claim %+v", c.K)
	}
}

func TestDeletedPodRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tok := f.issue(t, TokenSpec{Pod: pod})
	if _, ok, err := f.auth.AuthenticateToken(ctx, tok); !ok || err != nil {
		t.Fatalf("before deletion: ok %v err %v", ok, err)
	}
	if err := f.client.CoreV1().Pods("team").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refused(t, f.auth, ctx, tok, "pod team/web has been deleted")

	// A new pod of the same name is another pod.
	again := pod.DeepCopy()
	again.UID = "other-uid"
	if _, err := f.client.CoreV1().Pods("team").Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused(t, f.auth, ctx, tok, "does not match the claim")
}

func TestPodBeingDeleted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tok := f.issue(t, TokenSpec{Pod: pod})
	p, _ := f.client.CoreV1().Pods("team").Get(ctx, "web", metav1.GetOptions{})
	ts := metav1.NewTime(f.clock.Now())
	p.DeletionTimestamp = &ts
	if _, err := f.client.CoreV1().Pods("team").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.auth.AuthenticateToken(ctx, tok); !ok || err != nil {
		t.Fatalf("within the leeway: ok %v err %v", ok, err)
	}
	f.clock.Step(Leeway + time.Second)
	refused(t, f.auth, ctx, tok, "has been deleted")
}

func TestServiceAccountGoneOrReplaced(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tok := f.issue(t, TokenSpec{})
	if _, ok, err := f.auth.AuthenticateToken(ctx, tok); !ok || err != nil {
		t.Fatalf("unbound token: ok %v err %v", ok, err)
	}
	if err := f.client.CoreV1().ServiceAccounts("team").Delete(ctx, "builder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refused(t, f.auth, ctx, tok, "service account team/builder has been deleted")
	again := sa.DeepCopy()
	again.UID = "new-sa-uid"
	if _, err := f.client.CoreV1().ServiceAccounts("team").Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused(t, f.auth, ctx, tok, "does not match the claim")
}

func TestSecretAndNodeBindings(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	secretTok := f.issue(t, TokenSpec{Secret: secret})
	nodeTok := f.issue(t, TokenSpec{Node: node})
	for name, tok := range map[string]string{"secret": secretTok, "node": nodeTok} {
		if _, ok, err := f.auth.AuthenticateToken(ctx, tok); !ok || err != nil {
			t.Fatalf("%s-bound: ok %v err %v", name, ok, err)
		}
	}
	if err := f.client.CoreV1().Secrets("team").Delete(ctx, "tok", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refused(t, f.auth, ctx, secretTok, "secret team/tok has been deleted")
	if err := f.client.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	refused(t, f.auth, ctx, nodeTok, "node node-a has been deleted")
}

func TestExpiry(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tok := f.issue(t, TokenSpec{Pod: pod, Lifetime: 10 * time.Minute})
	f.clock.Step(10*time.Minute + Leeway - time.Second)
	if _, ok, err := f.auth.AuthenticateToken(ctx, tok); !ok || err != nil {
		t.Fatalf("within the leeway: ok %v err %v", ok, err)
	}
	f.clock.Step(2 * time.Second)
	refused(t, f.auth, ctx, tok, "expired")
}

func TestNotYetValid(t *testing.T) {
	f := newFixture(t)
	tok := f.issue(t, TokenSpec{})
	f.clock.Step(-(Leeway + time.Minute))
	refused(t, f.auth, context.Background(), tok, "service account token")
}

func TestAudience(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	vault := f.issue(t, TokenSpec{Audiences: []string{"vault"}})
	refused(t, f.auth, ctx, vault, "not among the accepted")
	// A server that accepts "vault" (the request context says so) takes it.
	resp, ok, err := f.auth.AuthenticateToken(authenticator.WithAudiences(ctx, authenticator.Audiences{"vault", "other"}), vault)
	if !ok || err != nil || !slices.Equal([]string(resp.Audiences), []string{"vault"}) {
		t.Fatalf("with audience vault: ok %v err %v resp %+v", ok, err, resp)
	}
}

func TestSignature(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tok := f.issue(t, TokenSpec{})

	// Signed by another key of the same issuer.
	otherKey, err := EnsureKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewIssuer(IssuerConfig{Key: otherKey, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	forged, _, err := other.Issue(TokenSpec{ServiceAccount: sa, Audiences: []string{DefaultIssuer}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	refused(t, f.auth, ctx, forged, "invalid signature")

	// The payload changed under a valid signature.
	parts := strings.Split(tok, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tampered := strings.Replace(string(payload), "builder", "admin00", -1)
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(tampered))
	refused(t, f.auth, ctx, strings.Join(parts, "."), "invalid signature")

	// A verifier trusting both keys accepts both (key rotation).
	both, err := NewAuthenticator(AuthenticatorConfig{Keys: []crypto.PublicKey{other.PublicKey(), f.issuer.PublicKey()}, Getter: ClientGetter{Client: f.client}, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range []string{tok, forged} {
		if _, ok, err := both.AuthenticateToken(ctx, tk); !ok || err != nil {
			t.Fatalf("with both keys: ok %v err %v", ok, err)
		}
	}
}

// TestOthersTokens: bearer tokens that are not this issuer's JWTs are left
// to the next authenticator (no error).
func TestOthersTokens(t *testing.T) {
	f := newFixture(t)
	key, err := EnsureKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := NewIssuer(IssuerConfig{Key: key, Issuer: "https://other.example", Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	foreignTok, _, err := foreign.Issue(TokenSpec{ServiceAccount: sa, Audiences: []string{DefaultIssuer}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"bootstrap token": "abcdef.0123456789abcdef", "garbage": "a.b.c", "other issuer": foreignTok} {
		resp, ok, err := f.auth.AuthenticateToken(context.Background(), tok)
		if resp != nil || ok || err != nil {
			t.Errorf("%s: resp %v ok %v err %v, want nil, false, nil", name, resp, ok, err)
		}
	}
}

func TestIssueRefusesBadSpecs(t *testing.T) {
	f := newFixture(t)
	otherNS := pod.DeepCopy()
	otherNS.Namespace = "elsewhere"
	for name, spec := range map[string]TokenSpec{
		"no service account": {Audiences: []string{"a"}, Lifetime: time.Hour},
		"no uid":             {ServiceAccount: &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "x"}}, Audiences: []string{"a"}, Lifetime: time.Hour},
		"no audience":        {ServiceAccount: sa, Lifetime: time.Hour},
		"no lifetime":        {ServiceAccount: sa, Audiences: []string{"a"}},
		"pod and secret":     {ServiceAccount: sa, Audiences: []string{"a"}, Lifetime: time.Hour, Pod: pod, Secret: secret},
		"pod elsewhere":      {ServiceAccount: sa, Audiences: []string{"a"}, Lifetime: time.Hour, Pod: otherNS},
	} {
		if _, _, err := f.issuer.Issue(spec); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: err %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestEnsureKey(t *testing.T) {
	dir := t.TempDir()
	k1, err := EnsureKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", st.Mode().Perm())
	}
	k2, err := EnsureKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.(*ecdsa.PrivateKey).Equal(k2) {
		t.Fatal("a second start generated another key")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("data dir holds %d files, want only %s", len(entries), KeyFile)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureKey(dir); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("junk key file: %v, want ErrInvalidArgument", err)
	}
}

// TestRSAKey: an operator's RSA key (kubeadm's sa.key) signs RS256.
func TestRSAKey(t *testing.T) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)})
	if err := os.WriteFile(filepath.Join(dir, KeyFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := EnsureKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	iss, err := NewIssuer(IssuerConfig{Key: key, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := iss.Issue(TokenSpec{ServiceAccount: sa, Audiences: []string{DefaultIssuer}, Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	header, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if !strings.Contains(string(header), `"RS256"`) {
		t.Errorf("header %s, want RS256", header)
	}
	auth, err := NewAuthenticator(AuthenticatorConfig{Keys: []crypto.PublicKey{iss.PublicKey()}, Getter: ClientGetter{Client: f.client}, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := auth.AuthenticateToken(context.Background(), tok); !ok || err != nil {
		t.Fatalf("RS256 token: ok %v err %v", ok, err)
	}
}

func TestConfigValidation(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	getter := ClientGetter{Client: fake.NewClientset()}
	for name, cfg := range map[string]AuthenticatorConfig{
		"no keys":   {Getter: getter},
		"bad curve": {Keys: []crypto.PublicKey{&p224.PublicKey}, Getter: getter},
		"no getter": {Keys: []crypto.PublicKey{&p256.PublicKey}},
	} {
		if _, err := NewAuthenticator(cfg); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	for name, cfg := range map[string]IssuerConfig{
		"no key":      {},
		"bad curve":   {Key: p224},
		"http issuer": {Key: p256, Issuer: "http://kubernetes.default.svc"},
	} {
		if _, err := NewIssuer(cfg); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestUsername(t *testing.T) {
	if got := Username("ns", "sa"); got != "system:serviceaccount:ns:sa" {
		t.Fatalf("Username = %q", got)
	}
	for in, want := range map[string][2]string{
		"system:serviceaccount:ns:sa": {"ns", "sa"},
		"system:serviceaccount:ns":    {},
		"system:serviceaccount::sa":   {},
		"system:node:n":               {},
		"system:serviceaccount:a:b:c": {},
	} {
		ns, name, ok := SplitUsername(in)
		if ok != (want[0] != "") || ns != want[0] || name != want[1] {
			t.Errorf("SplitUsername(%q) = %q, %q, %v", in, ns, name, ok)
		}
	}
}
