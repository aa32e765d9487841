// Package bootstrap gets the agent its node credentials. With an apiserver
// serving certificates.k8s.io (ServesCSRs), Obtain trades the join token for
// a node client certificate (CN=system:node:NAME, O=system:nodes, signer
// kubernetes.io/kube-apiserver-client-kubelet) and, once the Node is
// registered, gets the agent API's serving certificate (signer
// kubernetes.io/kubelet-serving), as the kubelet's TLS bootstrap does. Where
// the control plane's data directory is readable (one machine, `berth up`)
// and there is no CSR API, IssueServingCert signs the serving certificate
// directly with DATA-DIR/ca.key, so the apiserver's node transport — which
// accepts only serving certificates signed by the cluster CA — reaches it.
//
// A Rotator then keeps a certificate from the CSR API valid, as the
// kubelet's certificate manager: a new CSR (new key) between 70 % and 84 %
// of the certificate's lifetime, the old certificate in use until the new
// one is issued, handed to TLS through GetClientCertificate (the node's
// API client, NewClientRotator) or GetCertificate (the agent API's server).
package bootstrap

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"berth/internal/errdefs"
)

// ServingValidity is how long an issued serving certificate is valid.
const ServingValidity = 365 * 24 * time.Hour

// ServingCert describes the agent API's serving certificate to issue.
type ServingCert struct {
	// CACertFile and CAKeyFile are the cluster CA (DATA-DIR/ca.crt, ca.key).
	CACertFile, CAKeyFile string
	// NodeName is the subject (system:node:NAME, O=system:nodes, as the
	// kubelet's serving certificates) and a DNS name.
	NodeName string
	// IPs are the IP SANs (the node's addresses).
	IPs []net.IP
	// Dir receives kubelet.crt and kubelet.key.
	Dir string
}

// IssueServingCert signs a serving certificate for the agent with the
// cluster CA and writes it under s.Dir; it returns the two file paths.
func IssueServingCert(s ServingCert) (certFile, keyFile string, err error) {
	if s.CACertFile == "" || s.CAKeyFile == "" || s.NodeName == "" || s.Dir == "" {
		return "", "", fmt.Errorf("bootstrap: ServingCert: CACertFile, CAKeyFile, NodeName and Dir are required: %w", errdefs.ErrInvalidArgument)
	}
	cas, err := certutil.CertsFromFile(s.CACertFile)
	if err != nil {
		return "", "", fmt.Errorf("bootstrap: CACertFile %s: %w", s.CACertFile, err)
	}
	caKeyAny, err := keyutil.PrivateKeyFromFile(s.CAKeyFile)
	if err != nil {
		return "", "", fmt.Errorf("bootstrap: CAKeyFile %s: %w", s.CAKeyFile, err)
	}
	caKey, ok := caKeyAny.(crypto.Signer)
	if !ok {
		return "", "", fmt.Errorf("bootstrap: CAKeyFile %s: not a signing key: %w", s.CAKeyFile, errdefs.ErrInvalidArgument)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "system:node:" + s.NodeName, Organization: []string{"system:nodes"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(ServingValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{s.NodeName},
		IPAddresses:  s.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, cas[0], key.Public(), caKey)
	if err != nil {
		return "", "", fmt.Errorf("bootstrap: signing the serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(s.Dir, "kubelet.crt"), filepath.Join(s.Dir, "kubelet.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}
