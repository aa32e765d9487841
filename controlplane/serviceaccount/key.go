package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"berth/internal/errdefs"
)

// KeyFile is the signing key's file name in the server's data directory.
const KeyFile = "sa.key"

// EnsureKey loads the service-account signing key from dir/KeyFile,
// generating an ECDSA P-256 key (mode 0600) on first start. An existing
// file may also hold an RSA key (PKCS#1 or PKCS#8), as kubeadm's sa.key.
func EnsureKey(dir string) (crypto.Signer, error) {
	if dir == "" {
		return nil, fmt.Errorf("serviceaccount: key directory is required: %w", errdefs.ErrInvalidArgument)
	}
	path := filepath.Join(dir, KeyFile)
	data, err := os.ReadFile(path)
	if err == nil {
		key, err := ParseKey(data)
		if err != nil {
			return nil, fmt.Errorf("serviceaccount: %s: %w", path, err)
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: generating signing key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: encoding signing key: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	// Written to a temporary file and renamed, so a crash leaves no half key.
	tmp, err := os.CreateTemp(dir, "."+KeyFile+".*")
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := pem.Encode(tmp, &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("serviceaccount: writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("serviceaccount: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	return key, nil
}

// ParseKey reads a PEM private key: ECDSA (SEC 1 or PKCS#8) or RSA
// (PKCS#1 or PKCS#8).
func ParseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("no PEM block in the key file: %w", errdefs.ErrInvalidArgument)
	}
	switch block.Type {
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("EC private key: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		return k, nil
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("RSA private key: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PKCS#8 private key: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		switch k := k.(type) {
		case *ecdsa.PrivateKey:
			return k, nil
		case *rsa.PrivateKey:
			return k, nil
		}
		return nil, fmt.Errorf("PKCS#8 key of type %T: want ECDSA or RSA: %w", k, errdefs.ErrInvalidArgument)
	}
	return nil, fmt.Errorf("PEM block %q: want an EC, RSA or PKCS#8 private key: %w", block.Type, errdefs.ErrInvalidArgument)
}
