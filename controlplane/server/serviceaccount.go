package server

import (
	"crypto"
	"fmt"

	"k8s.io/apiserver/pkg/authentication/authenticator"

	"berth/controlplane/resources"
	"berth/controlplane/serviceaccount"
)

// serviceAccountTokens is the server's service-account token machinery:
// the signing key kept in the data dir (serviceaccount.KeyFile), the
// issuer behind serviceaccounts/token, and the authenticator for the
// tokens it issues.
type serviceAccountTokens struct {
	issuer    *serviceaccount.Issuer
	audiences []string
}

// newServiceAccountTokens loads the signing key from the data dir,
// generating it on first start. The API audiences are the issuer, as
// kube-apiserver's --api-audiences defaults to --service-account-issuer.
func newServiceAccountTokens(dataDir string) (*serviceAccountTokens, error) {
	key, err := serviceaccount.EnsureKey(dataDir)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	issuer, err := serviceaccount.NewIssuer(serviceaccount.IssuerConfig{Key: key})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return &serviceAccountTokens{issuer: issuer, audiences: []string{issuer.Issuer()}}, nil
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
		Keys:         []crypto.PublicKey{t.issuer.PublicKey()},
		Issuers:      []string{t.issuer.Issuer()},
		APIAudiences: t.audiences,
		Getter:       getter,
	})
}
