// Package testpki makes throwaway certificate authorities and certificates
// for tests (webhook and extension servers, client identities, fake
// agents), and serves a handler over TLS on 127.0.0.1. Keys are ECDSA
// P-256; everything is valid from an hour ago for an hour unless a
// template says otherwise.
package testpki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// CA is a certificate authority: its certificate (parsed and PEM) and key.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	Key     crypto.Signer
}

// NewCA is a self-signed CA named cn.
func NewCA(tb testing.TB, cn string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &CA{Cert: cert, CertPEM: pemCert(der), Key: key}
}

// LoadCA reads the CA of a berth data dir (ca.crt and ca.key in dir).
func LoadCA(tb testing.TB, dir string) *CA {
	tb.Helper()
	certFile := filepath.Join(dir, "ca.crt")
	certs, err := certutil.CertsFromFile(certFile)
	if err != nil {
		tb.Fatal(err)
	}
	key, err := keyutil.PrivateKeyFromFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		tb.Fatal(err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		tb.Fatalf("%s: key of type %T cannot sign", dir, key)
	}
	return &CA{Cert: certs[0], CertPEM: pemCert(certs[0].Raw), Key: signer}
}

// Sign issues tmpl for a new key: a random serial number and the default
// validity are filled in where tmpl leaves them zero. It returns the
// certificate and the key in PEM.
func (ca *CA) Sign(tb testing.TB, tmpl *x509.Certificate) (certPEM, keyPEM []byte) {
	tb.Helper()
	if tmpl.SerialNumber == nil {
		tmpl.SerialNumber = serial(tb)
	}
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = time.Now().Add(-time.Hour)
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = time.Now().Add(time.Hour)
	}
	if tmpl.KeyUsage == 0 {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	}
	key := newKey(tb)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pemCert(der), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// Serving is a server certificate for hosts (IP addresses and DNS names;
// the first is the common name).
func (ca *CA) Serving(tb testing.TB, hosts ...string) tls.Certificate {
	tb.Helper()
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: hosts[0]}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	certPEM, keyPEM := ca.Sign(tb, tmpl)
	return keyPair(tb, certPEM, keyPEM)
}

// ClientPEM is a client certificate for user in groups (CN and O), in PEM.
func (ca *CA) ClientPEM(tb testing.TB, user string, groups ...string) (certPEM, keyPEM []byte) {
	tb.Helper()
	return ca.Sign(tb, &x509.Certificate{Subject: pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// Client is ClientPEM as a TLS certificate.
func (ca *CA) Client(tb testing.TB, user string, groups ...string) tls.Certificate {
	tb.Helper()
	certPEM, keyPEM := ca.ClientPEM(tb, user, groups...)
	return keyPair(tb, certPEM, keyPEM)
}

// Pool is a certificate pool holding the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// CSR is a PEM certificate signing request for cn in orgs, with its new key.
func CSR(cn string, orgs ...string) (csrPEM []byte, key *ecdsa.PrivateKey, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: orgs}}, k)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), k, nil
}

// ServeTLS serves h over TLS with cfg on a free port of 127.0.0.1 until the
// test ends, and returns the port.
func ServeTLS(tb testing.TB, h http.Handler, cfg *tls.Config) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: h, TLSConfig: cfg}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	tb.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func keyPair(tb testing.TB, certPEM, keyPEM []byte) tls.Certificate {
	tb.Helper()
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		tb.Fatal(err)
	}
	return cert
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func serial(tb testing.TB) *big.Int {
	tb.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
