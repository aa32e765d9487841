package apiserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestServiceAccountIssuerDiscovery reads the OpenID discovery documents
// as a relying party does and checks a real service-account token's
// signature with the published key set; service accounts may read them
// (system:service-account-issuer-discovery), other users not.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	cs := shared.Client(t)
	ctx := context.Background()
	const ns = "issuer-discovery"
	admissionNamespace(t, cs, ns, nil)
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "relying"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "relying",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"oidc-discovery-test"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The documents, read with a token of the service account for the
	// API (the one above is for another audience, which the API refuses).
	apiToken, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "relying", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saCfg := rest.AnonymousClientConfig(shared.RESTConfig(t))
	saCfg.BearerToken = apiToken.Status.Token
	sa, err := kubernetes.NewForConfig(saCfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sa.RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /.well-known/openid-configuration as a service account: %v", err)
	}
	var config struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		Algs          []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.Unmarshal(raw, &config); err != nil {
		t.Fatal(err)
	}
	if config.Issuer != "https://kubernetes.default.svc.cluster.local" ||
		!slices.Equal(config.ResponseTypes, []string{"id_token"}) || !slices.Equal(config.SubjectTypes, []string{"public"}) || len(config.Algs) == 0 {
		t.Fatalf("openid-configuration %s", raw)
	}
	// jwks_uri is on the address the kubernetes endpoints publish (pods
	// reach it; not the loopback the server listens on here), its port.
	u, err := url.Parse(config.JWKSURI)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(shared.Addr)
	if ip := net.ParseIP(u.Hostname()); u.Scheme != "https" || u.Path != "/openid/v1/jwks" || u.Port() != port || ip == nil || ip.IsLoopback() {
		t.Fatalf("jwks_uri %s, want https://PUBLIC-IP:%s/openid/v1/jwks", config.JWKSURI, port)
	}
	raw, err = sa.RESTClient().Get().AbsPath(u.Path).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET %s: %v", u.Path, err)
	}
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatalf("JWKS %s: %v", raw, err)
	}

	// The token verifies with the published key its header names.
	algs := make([]jose.SignatureAlgorithm, 0, len(config.Algs))
	for _, a := range config.Algs {
		algs = append(algs, jose.SignatureAlgorithm(a))
	}
	sig, err := jose.ParseSigned(tr.Status.Token, algs)
	if err != nil {
		t.Fatal(err)
	}
	kid := sig.Signatures[0].Header.KeyID
	found := keys.Key(kid)
	if len(found) != 1 || found[0].Use != "sig" || !found[0].IsPublic() {
		t.Fatalf("key %q in the JWKS: %+v", kid, found)
	}
	payload, err := sig.Verify(found[0])
	if err != nil {
		t.Fatalf("the token does not verify with the published key: %v", err)
	}
	var claims struct {
		Iss string   `json:"iss"`
		Sub string   `json:"sub"`
		Aud []string `json:"aud"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Iss != config.Issuer || claims.Sub != "system:serviceaccount:"+ns+":relying" || !slices.Equal(claims.Aud, []string{"oidc-discovery-test"}) {
		t.Fatalf("claims %+v", claims)
	}
	// A tampered token does not.
	parts := strings.Split(tr.Status.Token, ".")
	tampered, _ := json.Marshal(map[string]any{"iss": config.Issuer, "sub": "system:serviceaccount:kube-system:admin"})
	forged, err := jose.ParseSigned(parts[0]+"."+strings.TrimRight(b64(tampered), "=")+"."+parts[2], algs)
	if err == nil {
		if _, err := forged.Verify(found[0]); err == nil {
			t.Fatal("a token with another payload verifies")
		}
	}

	// A user who is no service account may not read them.
	bobCfg := shared.RESTConfig(t)
	bobCfg.Impersonate = rest.ImpersonationConfig{UserName: "bob"}
	bob, err := kubernetes.NewForConfig(bobCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.RESTClient().Get().AbsPath("/openid/v1/jwks").DoRaw(ctx); !apierrors.IsForbidden(err) {
		t.Fatalf("GET /openid/v1/jwks as bob: %v, want 403", err)
	}
}

// b64 is base64url.
func b64(b []byte) string { return base64.URLEncoding.EncodeToString(b) }
