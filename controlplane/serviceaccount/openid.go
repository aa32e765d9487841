package serviceaccount

import (
	"crypto"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	jose "github.com/go-jose/go-jose/v4"

	"berth/internal/errdefs"
)

// The service-account issuer discovery paths (OpenID Connect discovery),
// as kube-apiserver serves them.
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
)

// openIDMaxAge is the Cache-Control max-age of the documents, as
// upstream's for keys read from files.
const openIDMaxAge = 3600

// OpenIDMetadata is the issuer discovery of service-account tokens: the
// OpenID provider configuration and the JSON Web Key Set of the keys that
// verify them, so that relying parties outside the cluster can check a
// token's signature.
type OpenIDMetadata struct {
	configJSON, keysetJSON []byte
}

// NewOpenIDMetadata builds the documents of issuer (an https URL without
// query or fragment), its keys and jwksURI — given (https), or else
// https://EXTERNAL-ADDRESS/openid/v1/jwks, as kube-apiserver's
// --service-account-jwks-uri.
func NewOpenIDMetadata(issuer, jwksURI, externalAddress string, keys []crypto.PublicKey) (*OpenIDMetadata, error) {
	iss, err := url.Parse(issuer)
	if err != nil || iss.Scheme != "https" || iss.Host == "" {
		return nil, fmt.Errorf("issuer URL must use https scheme, got: %s: %w", issuer, errdefs.ErrInvalidArgument)
	}
	if iss.RawQuery != "" || iss.Fragment != "" {
		return nil, fmt.Errorf("issuer URL may not include a query or fragment, got: %s: %w", issuer, errdefs.ErrInvalidArgument)
	}
	if jwksURI == "" {
		if externalAddress == "" {
			return nil, fmt.Errorf("either the JWKS URI or the external address must be set: %w", errdefs.ErrInvalidArgument)
		}
		jwksURI = (&url.URL{Scheme: "https", Host: externalAddress, Path: JWKSPath}).String()
	} else if u, err := url.Parse(jwksURI); err != nil || u.Scheme != "https" {
		return nil, fmt.Errorf("jwksURI requires https scheme, parsed as: %s: %w", jwksURI, errdefs.ErrInvalidArgument)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no keys provided for validating keyset: %w", errdefs.ErrInvalidArgument)
	}
	var set jose.JSONWebKeySet
	var algs []string
	for i, k := range keys {
		alg, err := signatureAlgorithm(k)
		if err != nil {
			return nil, fmt.Errorf("key #%d: %w", i, err)
		}
		kid, err := KeyID(k)
		if err != nil {
			return nil, fmt.Errorf("key #%d: %w", i, err)
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(alg), Use: "sig"})
		if !slices.Contains(algs, string(alg)) {
			algs = append(algs, string(alg))
		}
	}
	slices.Sort(algs)
	keyset, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("service account issuer JWKS: %w", err)
	}
	config, err := json.Marshal(struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}{issuer, jwksURI, []string{"id_token"}, []string{"public"}, algs})
	if err != nil {
		return nil, fmt.Errorf("service account issuer metadata: %w", err)
	}
	return &OpenIDMetadata{configJSON: config, keysetJSON: keyset}, nil
}

// ServeHTTP answers GET of OpenIDConfigPath (application/json) and
// JWKSPath (application/jwk-set+json), cacheable publicly for an hour;
// other methods get 405, other paths 404.
func (m *OpenIDMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	var contentType string
	switch r.URL.Path {
	case OpenIDConfigPath:
		body, contentType = m.configJSON, "application/json"
	case JWKSPath:
		body, contentType = m.keysetJSON, "application/jwk-set+json"
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", openIDMaxAge))
	_, _ = w.Write(body)
}
