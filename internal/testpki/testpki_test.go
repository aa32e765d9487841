package testpki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A server certificate and a client certificate from one CA complete a
// mutual TLS handshake with ServeTLS, the server seeing the client's name
// and groups.
func TestServingAndClientCertificatesHandshake(t *testing.T) {
	ca := NewCA(t, "test-ca")
	seen := make(chan []string, 1)
	port := ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		subject := r.TLS.VerifiedChains[0][0].Subject
		seen <- append([]string{subject.CommonName}, subject.Organization...)
	}), &tls.Config{Certificates: []tls.Certificate{ca.Serving(t, "127.0.0.1", "svc.example")},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: ca.Pool(), Certificates: []tls.Certificate{ca.Client(t, "alice", "dev", "ops")}}}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-seen; !slices.Equal(got, []string{"alice", "dev", "ops"}) {
		t.Fatalf("client identity %v, want alice in dev and ops", got)
	}
	leaf := resp.TLS.PeerCertificates[0]
	if !slices.Equal(leaf.DNSNames, []string{"svc.example"}) || len(leaf.IPAddresses) != 1 || leaf.IPAddresses[0].String() != "127.0.0.1" {
		t.Fatalf("serving certificate names %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
}

// LoadCA reads a data dir's ca.crt and ca.key; what it signs chains to it.
func TestLoadCASignsChainingCertificates(t *testing.T) {
	orig := NewCA(t, "cluster-ca")
	dir := t.TempDir()
	keyDER, err := x509.MarshalPKCS8PrivateKey(orig.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), orig.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	certPEM, _ := LoadCA(t, dir).ClientPEM(t, "system:node:n1", "system:nodes")
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: orig.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("certificate signed by the loaded CA: %v", err)
	}
}

// CSR requests the subject it is given, signed by the key it returns.
func TestCSR(t *testing.T) {
	csrPEM, key, err := CSR("system:node:n1", "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(csrPEM)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.CheckSignature(); err != nil || !key.PublicKey.Equal(req.PublicKey) {
		t.Fatalf("request not signed by its key: %v", err)
	}
	if req.Subject.CommonName != "system:node:n1" || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		t.Fatalf("subject %v", req.Subject)
	}
}
