package bootstrap

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	certutil "k8s.io/client-go/util/cert"

	"berth/internal/errdefs"
)

// writeCA writes a fresh CA pair into dir.
func writeCA(t *testing.T, dir string) (*x509.Certificate, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "test-ca"}, crypto.Signer(key))
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return ca, certFile, keyFile
}

// The issued certificate chains to the CA for the node's name and IP, and
// names the node as the kubelet's serving certificates do.
func TestIssueServingCertChainsToTheCA(t *testing.T) {
	dir := t.TempDir()
	ca, caCert, caKey := writeCA(t, dir)
	certFile, keyFile, err := IssueServingCert(ServingCert{CACertFile: caCert, CAKeyFile: caKey, NodeName: "node-a",
		IPs: []net.IP{net.ParseIP("10.0.0.7")}, Dir: filepath.Join(dir, "pki")})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatalf("issued pair does not load: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range []string{"node-a", "10.0.0.7"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if leaf.Subject.CommonName != "system:node:node-a" || len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject = %v, want CN=system:node:node-a, O=system:nodes", leaf.Subject)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

func TestIssueServingCertErrors(t *testing.T) {
	dir := t.TempDir()
	_, caCert, _ := writeCA(t, dir)
	if _, _, err := IssueServingCert(ServingCert{CACertFile: caCert, NodeName: "n", Dir: dir}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("no CA key: err = %v, want ErrInvalidArgument", err)
	}
	if _, _, err := IssueServingCert(ServingCert{CACertFile: caCert, CAKeyFile: filepath.Join(dir, "missing.key"), NodeName: "n", Dir: dir}); err == nil {
		t.Error("a missing CA key file gave no error")
	}
}
