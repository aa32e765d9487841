package kubeletapi

import (
	"crypto/tls"
	"fmt"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// servingCertificate loads Config.CertFile/KeyFile, or the self-signed pair
// under RootDir/pki, generating it first when it is missing or unreadable.
func servingCertificate(cfg Config) (tls.Certificate, error) {
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("kubeletapi: load Config.CertFile/KeyFile: %w", err)
		}
		return cert, nil
	}
	certPath := filepath.Join(cfg.RootDir, "pki", "kubelet.crt")
	keyPath := filepath.Join(cfg.RootDir, "pki", "kubelet.key")
	if cert, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil {
		return cert, nil
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(cfg.NodeName, cfg.Addresses, nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubeletapi: generate self-signed serving certificate: %w", err)
	}
	if err := certutil.WriteCert(certPath, certPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("kubeletapi: write %s: %w", certPath, err)
	}
	if err := keyutil.WriteKey(keyPath, keyPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("kubeletapi: write %s: %w", keyPath, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubeletapi: generated certificate: %w", err)
	}
	return cert, nil
}
