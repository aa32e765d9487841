package certificates

import (
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"

	"berth/internal/errdefs"
)

// Signer names and the identities the rules use.
const (
	// KubeletClientSigner signs node client certificates.
	KubeletClientSigner = certificatesv1.KubeAPIServerClientKubeletSignerName
	// KubeletServingSigner signs node serving certificates.
	KubeletServingSigner = certificatesv1.KubeletServingSignerName
	// NodeUserPrefix starts a node's user name (system:node:NAME).
	NodeUserPrefix = "system:node:"
	// NodesGroup is the group of node identities.
	NodesGroup = "system:nodes"
)

// usagesAllowed reports whether usages are exactly required plus any of
// optional, each at most once.
func usagesAllowed(usages []certificatesv1.KeyUsage, required []certificatesv1.KeyUsage, optional ...certificatesv1.KeyUsage) error {
	seen := map[certificatesv1.KeyUsage]bool{}
	for _, u := range usages {
		if seen[u] {
			return fmt.Errorf("usage %q listed twice: %w", u, errdefs.ErrInvalidArgument)
		}
		seen[u] = true
		if !slices.Contains(required, u) && !slices.Contains(optional, u) {
			return fmt.Errorf("usage %q not allowed (want %v, optionally %v): %w", u, required, optional, errdefs.ErrInvalidArgument)
		}
	}
	for _, u := range required {
		if !seen[u] {
			return fmt.Errorf("usage %q is required: %w", u, errdefs.ErrInvalidArgument)
		}
	}
	return nil
}

// nodeSubject checks CN=system:node:NAME, O=system:nodes and returns NAME.
func nodeSubject(req *x509.CertificateRequest) (string, error) {
	if !slices.Equal(req.Subject.Organization, []string{NodesGroup}) {
		return "", fmt.Errorf("subject organization must be exactly [%s], got %v: %w", NodesGroup, req.Subject.Organization, errdefs.ErrInvalidArgument)
	}
	name, ok := strings.CutPrefix(req.Subject.CommonName, NodeUserPrefix)
	if !ok || name == "" {
		return "", fmt.Errorf("subject common name must be %sNAME, got %q: %w", NodeUserPrefix, req.Subject.CommonName, errdefs.ErrInvalidArgument)
	}
	return name, nil
}

// CheckKubeletClient checks a request against the
// kube-apiserver-client-kubelet signer's rules and returns the node name.
func CheckKubeletClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (string, error) {
	name, err := nodeSubject(req)
	if err != nil {
		return "", err
	}
	if len(req.DNSNames) > 0 || len(req.IPAddresses) > 0 || len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return "", fmt.Errorf("subject alternative names are not allowed in a kubelet client certificate: %w", errdefs.ErrInvalidArgument)
	}
	if err := usagesAllowed(usages, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, certificatesv1.UsageKeyEncipherment); err != nil {
		return "", err
	}
	return name, nil
}

// CheckKubeletServing checks a request against the kubelet-serving
// signer's rules and returns the node name.
func CheckKubeletServing(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (string, error) {
	name, err := nodeSubject(req)
	if err != nil {
		return "", err
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return "", fmt.Errorf("email and URI subject alternative names are not allowed in a kubelet serving certificate: %w", errdefs.ErrInvalidArgument)
	}
	if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
		return "", fmt.Errorf("at least one DNS or IP subject alternative name is required: %w", errdefs.ErrInvalidArgument)
	}
	if err := usagesAllowed(usages, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, certificatesv1.UsageKeyEncipherment); err != nil {
		return "", err
	}
	return name, nil
}

// Check checks a request against its signer's rules; signers berth does
// not implement give errdefs.ErrUnimplemented.
func Check(signer string, req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) (string, error) {
	switch signer {
	case KubeletClientSigner:
		return CheckKubeletClient(req, usages)
	case KubeletServingSigner:
		return CheckKubeletServing(req, usages)
	}
	return "", fmt.Errorf("signer %q: %w", signer, errdefs.ErrUnimplemented)
}
