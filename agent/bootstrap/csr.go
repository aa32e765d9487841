package bootstrap

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate/csr"

	"berth/internal/errdefs"
)

// ServesCSRs reports whether the apiserver serves
// certificates.k8s.io/v1 certificatesigningrequests (discovery).
func ServesCSRs(client kubernetes.Interface) bool {
	list, err := client.Discovery().ServerResourcesForGroupVersion(certificatesv1.SchemeGroupVersion.String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == "certificatesigningrequests" {
			return true
		}
	}
	return false
}

// Request is a node certificate to obtain through the CSR API, as the
// kubelet's TLS bootstrap and serving certificate manager do.
type Request struct {
	// Client talks to the apiserver: with the join token for the client
	// certificate, with the node's client certificate for the serving one
	// and for renewals.
	Client kubernetes.Interface
	// NodeName names the node: CN=system:node:NAME, O=system:nodes.
	NodeName string
	// Serving asks for a serving certificate (signer
	// kubernetes.io/kubelet-serving, SANs NodeName and IPs) instead of a
	// client one (kubernetes.io/kube-apiserver-client-kubelet).
	Serving bool
	IPs     []net.IP
	// Dir receives kubelet-client.{crt,key} or kubelet-serving.{crt,key}.
	Dir string
	// Timeout bounds the wait for approval and signing; default 2 min.
	Timeout time.Duration
	// Expiration, when not zero, is the lifetime asked for
	// (spec.expirationSeconds; signers honour at least 10 minutes). Zero
	// leaves it to the signer.
	Expiration time.Duration
}

// Files are the paths of r's certificate and key under r.Dir.
func (r Request) Files() (certFile, keyFile string) {
	kind := "client"
	if r.Serving {
		kind = "serving"
	}
	return filepath.Join(r.Dir, "kubelet-"+kind+".crt"), filepath.Join(r.Dir, "kubelet-"+kind+".key")
}

func (r Request) validate() error {
	if r.Client == nil || r.NodeName == "" || r.Dir == "" {
		return fmt.Errorf("bootstrap: Request: Client, NodeName and Dir are required: %w", errdefs.ErrInvalidArgument)
	}
	if r.Expiration < 0 {
		return fmt.Errorf("bootstrap: Request.Expiration %s: must not be negative: %w", r.Expiration, errdefs.ErrInvalidArgument)
	}
	return nil
}

// Obtain returns the paths of the certificate and key in r.Dir: the ones
// already there while they are valid for another hour (or, for a shorter
// lifetime asked for, while most of it remains), else a new pair requested
// through a CertificateSigningRequest and written there.
func Obtain(ctx context.Context, r Request) (certFile, keyFile string, err error) {
	if err := r.validate(); err != nil {
		return "", "", err
	}
	certFile, keyFile = r.Files()
	keep := time.Hour
	if r.Expiration > 0 {
		keep = min(keep, r.Expiration/2)
	}
	if pair, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		if leaf, err := x509.ParseCertificate(pair.Certificate[0]); err == nil && time.Until(leaf.NotAfter) > keep {
			return certFile, keyFile, nil
		}
	}
	if _, err := requestAndWrite(ctx, r); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// requestAndWrite asks for a new certificate for r with a new key, waits
// until it is issued, writes the pair to r's files (each replaced
// atomically, the key first) and returns it.
func requestAndWrite(ctx context.Context, r Request) (*tls.Certificate, error) {
	kind, signer := "client", certificatesv1.KubeAPIServerClientKubeletSignerName
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if r.Serving {
		kind, signer = "serving", certificatesv1.KubeletServingSignerName
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + r.NodeName, Organization: []string{"system:nodes"}}}
	if r.Serving {
		tmpl.DNSNames, tmpl.IPAddresses = []string{r.NodeName}, r.IPs
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, err
	}
	csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var duration *time.Duration
	if r.Expiration > 0 {
		duration = &r.Expiration
	}
	name, uid, err := csr.RequestCertificateWithContext(ctx, r.Client, csrPEM, "", signer, duration, usages, key)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: requesting the node %s certificate: %w", kind, err)
	}
	certPEM, err := csr.WaitForCertificate(ctx, r.Client, name, uid)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: waiting for CSR %s (node %s certificate): %w", name, kind, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: CSR %s issued an unusable node %s certificate: %w", name, kind, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return nil, err
	}
	certFile, keyFile := r.Files()
	if err := writeAtomic(keyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeAtomic(certFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	return &pair, nil
}

// writeAtomic replaces path with data: written beside it, then renamed.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
