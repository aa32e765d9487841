package certificates

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	"berth/internal/errdefs"
)

// DefaultMaxDuration is the longest certificate the signer issues, as
// kube-controller-manager's --cluster-signing-duration default.
const DefaultMaxDuration = 365 * 24 * time.Hour

// minDuration is the shortest certificate issued (spec.expirationSeconds
// below it is raised to it).
const minDuration = 10 * time.Minute

// backdate is how far before now certificates become valid, for clock skew.
const backdate = 5 * time.Minute

// Signer signs certificate requests with a CA.
type Signer struct {
	// CA and Key are the signing CA certificate and its private key.
	CA  *x509.Certificate
	Key crypto.Signer
	// MaxDuration caps the certificates' lifetime; DefaultMaxDuration when 0.
	MaxDuration time.Duration
}

// keyUsages maps requested usages to x509 key usages and extended key usages.
func keyUsages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var ku x509.KeyUsage
	var eku []x509.ExtKeyUsage
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature:
			ku |= x509.KeyUsageDigitalSignature
		case certificatesv1.UsageKeyEncipherment:
			ku |= x509.KeyUsageKeyEncipherment
		case certificatesv1.UsageClientAuth:
			eku = append(eku, x509.ExtKeyUsageClientAuth)
		case certificatesv1.UsageServerAuth:
			eku = append(eku, x509.ExtKeyUsageServerAuth)
		default:
			return 0, nil, fmt.Errorf("usage %q is not signed by berth: %w", u, errdefs.ErrInvalidArgument)
		}
	}
	return ku, eku, nil
}

// Sign issues a certificate for req at now, returning it PEM-encoded.
// expirationSeconds is the CSR's spec.expirationSeconds (nil: the maximum).
func (s Signer) Sign(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, expirationSeconds *int32, now time.Time) ([]byte, error) {
	if s.CA == nil || s.Key == nil {
		return nil, fmt.Errorf("certificates: signer has no CA: %w", errdefs.ErrInvalidArgument)
	}
	ku, eku, err := keyUsages(usages)
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(Duration(expirationSeconds, s.MaxDuration))
	if notAfter.After(s.CA.NotAfter) {
		notAfter = s.CA.NotAfter
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certificates: serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      req.Subject,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPAddresses,
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     ku,
		ExtKeyUsage:  eku,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.CA, req.PublicKey, s.Key)
	if err != nil {
		return nil, fmt.Errorf("certificates: sign: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// Duration is the lifetime of a certificate for expirationSeconds: at
// least 10 minutes, at most maxDuration (DefaultMaxDuration when 0).
func Duration(expirationSeconds *int32, maxDuration time.Duration) time.Duration {
	if maxDuration <= 0 {
		maxDuration = DefaultMaxDuration
	}
	if expirationSeconds == nil {
		return maxDuration
	}
	d := time.Duration(*expirationSeconds) * time.Second
	if d < minDuration {
		d = minDuration
	}
	if d > maxDuration {
		d = maxDuration
	}
	return d
}
