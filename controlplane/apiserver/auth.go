package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
)

// Authenticator identifies the caller of a request.
type Authenticator interface {
	// Authenticate returns the caller, or false when the request carries no
	// valid credential.
	Authenticate(r *http.Request) (user.Info, bool)
}

// AgentUser is the identity of requests bearing the agent join token.
const AgentUser = "system:berth-agent"

// CertOrTokenAuthenticator accepts a client certificate verified by the TLS
// layer against the cluster CA (user = CN, groups = O), or a bearer token
// for which ValidToken says yes (user AgentUser).
type CertOrTokenAuthenticator struct {
	// ValidToken reports whether a bearer token is acceptable.
	ValidToken func(token string) bool
}

// Authenticate implements Authenticator.
func (a CertOrTokenAuthenticator) Authenticate(r *http.Request) (user.Info, bool) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cert := r.TLS.VerifiedChains[0][0]
		if cert.Subject.CommonName != "" {
			groups := append([]string{}, cert.Subject.Organization...)
			groups = append(groups, user.AllAuthenticated)
			return &user.DefaultInfo{Name: cert.Subject.CommonName, Groups: groups}, true
		}
	}
	if h := r.Header.Get("Authorization"); h != "" && a.ValidToken != nil {
		scheme, token, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "bearer") && a.ValidToken(strings.TrimSpace(token)) {
			return &user.DefaultInfo{Name: AgentUser, Groups: []string{"system:bootstrappers", user.AllAuthenticated}}, true
		}
	}
	return nil, false
}
