package authentication

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"berth/internal/errdefs"
)

// ClientCertAuthenticator accepts a TLS client certificate that chains to
// Roots and is valid for client authentication: the user is the subject's
// CommonName, the groups its Organizations.
type ClientCertAuthenticator struct {
	// Roots are the CAs client certificates must chain to.
	Roots *x509.CertPool
	// Now is the verification time; nil: time.Now.
	Now func() time.Time
}

var _ authenticator.Request = (*ClientCertAuthenticator)(nil)

// AuthenticateRequest implements authenticator.Request: no certificate is
// no opinion; a certificate that does not verify, or has no CommonName, is
// an error (the request is refused).
func (a *ClientCertAuthenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	opts := x509.VerifyOptions{
		Roots:         a.Roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if a.Now != nil {
		opts.CurrentTime = a.Now()
	}
	for _, c := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, fmt.Errorf("client certificate %q: %w: %w", leaf.Subject.CommonName, err, errdefs.ErrUnauthenticated)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, fmt.Errorf("client certificate has no common name (the user name): %w", errdefs.ErrUnauthenticated)
	}
	return &authenticator.Response{User: &user.DefaultInfo{
		Name:   leaf.Subject.CommonName,
		Groups: append([]string(nil), leaf.Subject.Organization...),
	}}, true, nil
}
