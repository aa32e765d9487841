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
	// certificate, with the node's client certificate for the serving one.
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
}

// Obtain returns the paths of the certificate and key in r.Dir: the ones
// already there while they are valid for another hour, else a new pair
// requested through a CertificateSigningRequest and written there.
func Obtain(ctx context.Context, r Request) (certFile, keyFile string, err error) {
	if r.Client == nil || r.NodeName == "" || r.Dir == "" {
		return "", "", fmt.Errorf("bootstrap: Request: Client, NodeName and Dir are required: %w", errdefs.ErrInvalidArgument)
	}
	kind, signer := "client", certificatesv1.KubeAPIServerClientKubeletSignerName
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if r.Serving {
		kind, signer = "serving", certificatesv1.KubeletServingSignerName
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	}
	certFile, keyFile = filepath.Join(r.Dir, "kubelet-"+kind+".crt"), filepath.Join(r.Dir, "kubelet-"+kind+".key")
	if pair, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		if leaf, err := x509.ParseCertificate(pair.Certificate[0]); err == nil && time.Until(leaf.NotAfter) > time.Hour {
			return certFile, keyFile, nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + r.NodeName, Organization: []string{"system:nodes"}}}
	if r.Serving {
		tmpl.DNSNames, tmpl.IPAddresses = []string{r.NodeName}, r.IPs
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return "", "", err
	}
	csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name, uid, err := csr.RequestCertificateWithContext(ctx, r.Client, csrPEM, "", signer, nil, usages, key)
	if err != nil {
		return "", "", fmt.Errorf("bootstrap: requesting the node %s certificate: %w", kind, err)
	}
	certPEM, err := csr.WaitForCertificate(ctx, r.Client, name, uid)
	if err != nil {
		return "", "", fmt.Errorf("bootstrap: waiting for CSR %s (node %s certificate): %w", name, kind, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}
