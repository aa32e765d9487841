package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

func TestOpenIDMetadata(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keys := []crypto.PublicKey{ec.Public(), rk.Public()}
	for _, tc := range []struct {
		name, issuer, jwks, external string
		wantJWKS, wantErr            string
	}{
		{"derived from the external address", "https://issuer.example/path", "", "10.0.0.1:6443", "https://10.0.0.1:6443/openid/v1/jwks", ""},
		{"given", "https://issuer.example", "https://keys.example/jwks", "10.0.0.1:6443", "https://keys.example/jwks", ""},
		{"not https issuer", "kubernetes.default.svc", "", "10.0.0.1:6443", "", "issuer URL must use https scheme"},
		{"issuer with a query", "https://issuer.example?x=1", "", "10.0.0.1:6443", "", "may not include a query"},
		{"http jwks", "https://issuer.example", "http://keys.example/jwks", "", "", "jwksURI requires https scheme"},
		{"neither", "https://issuer.example", "", "", "", "either the JWKS URI or the external address"},
	} {
		m, err := NewOpenIDMetadata(tc.issuer, tc.jwks, tc.external, keys)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, OpenIDConfigPath, nil))
		var config map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &config); err != nil {
			t.Fatal(err)
		}
		if config["issuer"] != tc.issuer || config["jwks_uri"] != tc.wantJWKS || rec.Header().Get("Content-Type") != "application/json" ||
			rec.Header().Get("Cache-Control") != "public, max-age=3600" {
			t.Errorf("%s: %v %v", tc.name, config, rec.Header())
		}
		if algs, _ := json.Marshal(config["id_token_signing_alg_values_supported"]); string(algs) != `["ES256","RS256"]` {
			t.Errorf("%s: algorithms %s", tc.name, algs)
		}
		rec = httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, JWKSPath, nil))
		var set jose.JSONWebKeySet
		if err := json.Unmarshal(rec.Body.Bytes(), &set); err != nil || rec.Header().Get("Content-Type") != "application/jwk-set+json" {
			t.Fatalf("%s: JWKS %s (%v)", tc.name, rec.Body, err)
		}
		for _, k := range keys {
			kid, _ := KeyID(k)
			if found := set.Key(kid); len(found) != 1 || !found[0].IsPublic() || found[0].Use != "sig" {
				t.Errorf("%s: key %s: %+v", tc.name, kid, found)
			}
		}
		rec = httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, JWKSPath, nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: POST %d", tc.name, rec.Code)
		}
	}
}
