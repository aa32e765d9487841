package server

import (
	"crypto"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/util/keyutil"

	"berth/controlplane/resources"
	"berth/controlplane/serviceaccount"
	"berth/internal/errdefs"
)

// validateServiceAccounts checks the service-account token settings of c
// and fills their defaults: the issuer serviceaccount.DefaultIssuer, the
// API audiences the issuers (as kube-apiserver's --api-audiences).
func validateServiceAccounts(c *Config) error {
	if len(c.ServiceAccountIssuers) == 0 {
		c.ServiceAccountIssuers = []string{serviceaccount.DefaultIssuer}
	}
	for i, iss := range c.ServiceAccountIssuers {
		if iss == "" || strings.TrimSpace(iss) != iss {
			return fmt.Errorf("server config: --service-account-issuer %q: must be non-empty without surrounding spaces: %w", iss, errdefs.ErrInvalidArgument)
		}
		if strings.Contains(iss, ":") {
			u, err := url.Parse(iss)
			if err != nil || u.Scheme != "https" || u.Host == "" {
				return fmt.Errorf("server config: --service-account-issuer %q: a URL must be https://HOST[/PATH]: %w", iss, errdefs.ErrInvalidArgument)
			}
		}
		if slices.Contains(c.ServiceAccountIssuers[:i], iss) {
			return fmt.Errorf("server config: --service-account-issuer %q given twice: %w", iss, errdefs.ErrInvalidArgument)
		}
	}
	if len(c.APIAudiences) == 0 {
		c.APIAudiences = slices.Clone(c.ServiceAccountIssuers)
	}
	for _, a := range c.APIAudiences {
		if a == "" || strings.TrimSpace(a) != a {
			return fmt.Errorf("server config: --api-audiences %q: each audience must be non-empty without surrounding spaces: %w", a, errdefs.ErrInvalidArgument)
		}
	}
	if c.ServiceAccountSigningKeyFile != "" {
		if _, err := loadSigningKey(c.ServiceAccountSigningKeyFile); err != nil {
			return fmt.Errorf("server config: --service-account-signing-key-file: %w", err)
		}
	}
	for _, f := range c.ServiceAccountKeyFiles {
		if _, err := loadVerificationKeys(f); err != nil {
			return fmt.Errorf("server config: --service-account-key-file: %w", err)
		}
	}
	if c.ServiceAccountJWKSURI != "" {
		if u, err := url.Parse(c.ServiceAccountJWKSURI); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("server config: --service-account-jwks-uri %q: requires https scheme: %w", c.ServiceAccountJWKSURI, errdefs.ErrInvalidArgument)
		}
	}
	return nil
}

// loadSigningKey reads a PEM private key (ECDSA or RSA) from path.
func loadSigningKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
	}
	key, err := serviceaccount.ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}

// loadVerificationKeys reads the PEM public keys of path (private keys in
// it count by their public halves), as kube-apiserver's
// --service-account-key-file.
func loadVerificationKeys(path string) ([]crypto.PublicKey, error) {
	keys, err := keyutil.PublicKeysFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", path, err, errdefs.ErrInvalidArgument)
	}
	out := make([]crypto.PublicKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	return out, nil
}

// serviceAccountTokens is the server's service-account token machinery:
// the signing key (by default DataDir/sa.key, serviceaccount.KeyFile), the
// issuer behind serviceaccounts/token, and the authenticator for the
// tokens it and the other accepted issuers and keys signed.
type serviceAccountTokens struct {
	issuer    *serviceaccount.Issuer
	issuers   []string
	keys      []crypto.PublicKey
	audiences []string
}

// newServiceAccountTokens loads the signing key (generating DataDir/sa.key
// on first start when no key file is configured) and the further
// verification keys of c, which Validate has checked.
func newServiceAccountTokens(c *Config) (*serviceAccountTokens, error) {
	var key crypto.Signer
	var err error
	if c.ServiceAccountSigningKeyFile != "" {
		key, err = loadSigningKey(c.ServiceAccountSigningKeyFile)
	} else {
		key, err = serviceaccount.EnsureKey(c.DataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("server: service-account signing key: %w", err)
	}
	issuer, err := serviceaccount.NewIssuer(serviceaccount.IssuerConfig{Key: key, Issuer: c.ServiceAccountIssuers[0]})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	keys := []crypto.PublicKey{issuer.PublicKey()}
	for _, f := range c.ServiceAccountKeyFiles {
		more, err := loadVerificationKeys(f)
		if err != nil {
			return nil, fmt.Errorf("server: --service-account-key-file: %w", err)
		}
		keys = append(keys, more...)
	}
	return &serviceAccountTokens{issuer: issuer, issuers: c.ServiceAccountIssuers, keys: keys, audiences: c.APIAudiences}, nil
}

// issuerDiscovery serves the OpenID discovery documents of the first
// issuer and the verification keys (nil, logged, when the issuer is not
// an https URL: relying parties could not fetch them, as kube-apiserver).
func (t *serviceAccountTokens) issuerDiscovery(jwksURI, externalAddress string, log *slog.Logger) http.Handler {
	m, err := serviceaccount.NewOpenIDMetadata(t.issuers[0], jwksURI, externalAddress, t.keys)
	if err != nil {
		log.Info("service-account issuer discovery not served", "err", err)
		return nil
	}
	return m
}

// tokenRequest configures serviceaccounts/token for resources.Build:
// projected-volume tokens (3607 s) are extended, as upstream's default.
func (t *serviceAccountTokens) tokenRequest() *resources.TokenRequestConfig {
	return &resources.TokenRequestConfig{Issuer: t.issuer, APIAudiences: t.audiences, ExtendExpiration: true}
}

// authenticator verifies the tokens against the built stores (not a
// cache), so a token whose service account or pod is gone is refused at once.
func (t *serviceAccountTokens) authenticator(set *resources.Set) (authenticator.Token, error) {
	getter, err := set.ServiceAccountLookup()
	if err != nil {
		return nil, fmt.Errorf("server: service-account authenticator: %w", err)
	}
	return serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Keys:         t.keys,
		Issuers:      t.issuers,
		APIAudiences: t.audiences,
		Getter:       getter,
	})
}
