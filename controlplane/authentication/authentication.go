// Package authentication identifies the caller of an apiserver request, as
// kube-apiserver's authenticator chain does: a client certificate signed by
// the cluster CA (user = CN, groups = O), then a bearer token (static token
// file, bootstrap tokens, then the extra token authenticators such as
// service-account tokens). A request that presents a credential which
// fails is refused; a request that presents none is refused too, unless
// anonymous requests are enabled, in which case it proceeds as
// system:anonymous (group system:unauthenticated) and authorization decides.
//
// Every authenticated (non-anonymous) identity gains the group
// system:authenticated.
package authentication

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	requestunion "k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"

	"berth/internal/errdefs"
)

// Config says which credentials the chain accepts.
type Config struct {
	// ClientCA verifies client certificates; nil disables certificate
	// authentication.
	ClientCA *x509.CertPool
	// TokenAuthFile is a static token file (kube-apiserver's
	// --token-auth-file: CSV lines token,user,uid[,"group1,group2"]);
	// empty for none. It is read once, by New.
	TokenAuthFile string
	// BootstrapTokens, when set, enables bootstrap token authentication,
	// reading bootstrap.kubernetes.io/token secrets in kube-system through it.
	BootstrapTokens SecretGetter
	// Tokens are further bearer-token authenticators (service-account
	// tokens), asked after the static and bootstrap tokens.
	Tokens []authenticator.Token
	// APIAudiences are the audiences the apiserver identifies as
	// (--api-audiences): request contexts carry them, so audience-aware
	// token authenticators accept only tokens meant for the apiserver.
	APIAudiences authenticator.Audiences
	// Anonymous lets requests that carry no credential through as
	// system:anonymous (--anonymous-auth); otherwise they are refused.
	Anonymous bool
	// Now is the clock for token expiry; nil: time.Now.
	Now func() time.Time
}

// Authenticator is the chain. It implements authenticator.Request for HTTP
// requests and authenticator.Token for bare tokens (TokenReview).
type Authenticator struct {
	request   authenticator.Request
	token     authenticator.Token
	audiences authenticator.Audiences
}

var (
	_ authenticator.Request = (*Authenticator)(nil)
	_ authenticator.Token   = (*Authenticator)(nil)
)

// New validates cfg, reads the token file and builds the chain.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	for i, t := range cfg.Tokens {
		if t == nil {
			return nil, fmt.Errorf("authentication: Config.Tokens[%d] is nil: %w", i, errdefs.ErrInvalidArgument)
		}
	}
	var tokens []authenticator.Token
	if cfg.TokenAuthFile != "" {
		static, err := LoadTokenFile(cfg.TokenAuthFile)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, static)
	}
	if cfg.BootstrapTokens != nil {
		tokens = append(tokens, &BootstrapTokenAuthenticator{Secrets: cfg.BootstrapTokens, Now: cfg.Now})
	}
	if len(cfg.APIAudiences) > 0 && len(tokens) > 0 {
		// Static and bootstrap tokens carry no audience: they are good
		// for the apiserver's own audiences only.
		tokens = []authenticator.Token{authenticator.WrapAudienceAgnosticToken(cfg.APIAudiences, tokenunion.New(tokens...))}
	}
	tokens = append(tokens, cfg.Tokens...)

	var requests []authenticator.Request
	if cfg.ClientCA != nil {
		requests = append(requests, &ClientCertAuthenticator{Roots: cfg.ClientCA, Now: cfg.Now})
	}
	a := &Authenticator{audiences: cfg.APIAudiences}
	if len(tokens) > 0 {
		tokenChain := tokenunion.New(tokens...)
		a.token = tokenChain
		requests = append(requests, bearertoken.New(tokenChain), websocket.NewProtocolAuthenticator(tokenChain))
	}
	chain := group.NewAuthenticatedGroupAdder(requestunion.New(requests...))
	if cfg.Anonymous {
		// As upstream: a credential that fails is an error and stops the
		// chain; only requests without any credential become anonymous.
		chain = requestunion.NewFailOnError(chain, anonymous.NewAuthenticator(nil))
	}
	a.request = chain
	return a, nil
}

// AuthenticateRequest implements authenticator.Request. The request's
// context carries Config.APIAudiences while the chain runs.
func (a *Authenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	if len(a.audiences) > 0 {
		r = r.WithContext(authenticator.WithAudiences(r.Context(), a.audiences))
	}
	return a.request.AuthenticateRequest(r)
}

// Authenticate is AuthenticateRequest reduced to the caller, for
// controlplane/apiserver's Authenticator interface: false refuses the
// request with 401.
func (a *Authenticator) Authenticate(r *http.Request) (user.Info, bool) {
	resp, ok, err := a.AuthenticateRequest(r)
	if err != nil || !ok || resp == nil || resp.User == nil {
		return nil, false
	}
	return resp.User, true
}

// AuthenticateToken runs the bearer-token authenticators on a bare token
// (TokenReview): ctx carries the audiences to check, if any. Identities
// gain system:authenticated.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if a.token == nil || token == "" {
		return nil, false, nil
	}
	resp, ok, err := a.token.AuthenticateToken(ctx, token)
	if err != nil || !ok || resp == nil || resp.User == nil {
		return nil, false, err
	}
	u := resp.User
	if slices.Contains(u.GetGroups(), user.AllAuthenticated) {
		return resp, true, nil
	}
	out := *resp
	out.User = &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Extra: u.GetExtra(),
		Groups: append(slices.Clone(u.GetGroups()), user.AllAuthenticated)}
	return &out, true, nil
}
