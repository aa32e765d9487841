// Package pki creates and reloads the control plane's credentials in its data
// directory: the cluster CA, the apiserver's serving certificate, the admin
// client certificate with its kubeconfig, the apiserver's client
// certificate towards agents, the embedded etcd's own CA with its member's
// and the apiserver's certificates, and the agents' join token.
//
// Files (all under Dir): ca.crt ca.key, serving.crt serving.key,
// admin.crt admin.key, admin.kubeconfig, apiserver-node-client.{crt,key},
// etcd-ca.{crt,key}, etcd-server.{crt,key}, apiserver-etcd-client.{crt,key},
// agent-token. Everything is
// generated on first start and reused afterwards; the serving certificate is
// re-issued (by the same CA) when it lacks a requested host name or address.
// The join token is a bootstrap token, <id>.<secret> (see
// controlplane/authentication); the hex token of earlier berth versions
// is replaced by one.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"berth/controlplane/authentication"
	"berth/controlplane/authorization/rbac/bootstrap"
	"berth/internal/errdefs"
)

// File names inside the data directory.
const (
	CAFile             = "ca.crt"
	CAKeyFile          = "ca.key"
	ServingCertFile    = "serving.crt"
	ServingKeyFile     = "serving.key"
	AdminCertFile      = "admin.crt"
	AdminKeyFile       = "admin.key"
	NodeClientCertFile = "apiserver-node-client.crt"
	NodeClientKeyFile  = "apiserver-node-client.key"
	KubeconfigFile     = "admin.kubeconfig"
	AgentTokenFile     = "agent-token"
)

// The embedded etcd's own CA and the only two certificates it signs: the
// member's (serving clients and its peer) and the apiserver's client
// certificate towards it. Nothing the cluster CA signs — a node's or a
// user's certificate — is accepted by etcd.
const (
	EtcdCAFile         = "etcd-ca.crt"
	EtcdCAKeyFile      = "etcd-ca.key"
	EtcdCertFile       = "etcd-server.crt"
	EtcdKeyFile        = "etcd-server.key"
	EtcdClientCertFile = "apiserver-etcd-client.crt"
	EtcdClientKeyFile  = "apiserver-etcd-client.key"
)

// The front-proxy CA, separate from the cluster CA as kube-apiserver's
// --requestheader-client-ca-file, and the apiserver's client certificate
// from it (--proxy-client-cert-file): what it presents to extension
// apiservers when it proxies a request to an APIService, with the
// caller's identity in the X-Remote-User/-Group/-Extra- headers.
const (
	FrontProxyCAFile         = "front-proxy-ca.crt"
	FrontProxyCAKeyFile      = "front-proxy-ca.key"
	FrontProxyClientCertFile = "front-proxy-client.crt"
	FrontProxyClientKeyFile  = "front-proxy-client.key"
)

// FrontProxyClientName is the front-proxy client certificate's common
// name, the one requestheader-allowed-names lists (kubeadm's).
const FrontProxyClientName = "front-proxy-client"

// legacyEtcdFiles are the embedded etcd's identity of berth versions before
// its own CA (signed by the cluster CA): removed once replaced.
var legacyEtcdFiles = []string{"etcd.crt", "etcd.key"}

// AdminUser and AdminGroup name the admin client certificate's subject.
const (
	AdminUser  = "kubernetes-admin"
	AdminGroup = "system:masters"
)

// NodeClientUser is the apiserver's user towards node agents: in no group,
// it holds what the RBAC bootstrap policy binds it to
// (system:kubelet-api-admin).
const NodeClientUser = bootstrap.APIServerKubeletClientUser

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
)

// Options says what the serving certificate must cover.
type Options struct {
	// Dir is the directory holding the files (created 0700 if missing).
	Dir string
	// Hosts are extra DNS names or IP addresses for the serving certificate,
	// beyond 127.0.0.1, ::1, localhost and the machine's hostname.
	Hosts []string
}

// Bundle is the loaded set of credentials.
type Bundle struct {
	// Dir is where the files live.
	Dir string
	// CA is the cluster CA certificate; CAPEM its PEM encoding.
	CA    *x509.Certificate
	CAPEM []byte
	// CAKey is the cluster CA's private key, for signing certificates
	// (controlplane/controller/certificates signs approved CSRs with it).
	CAKey crypto.Signer
	// EtcdCA is the embedded etcd's CA (EtcdCAFile).
	EtcdCA *x509.Certificate
	// ServingCertPEM and ServingKeyPEM are the apiserver's TLS identity.
	ServingCertPEM, ServingKeyPEM []byte
	// AdminCertPEM and AdminKeyPEM are the admin client identity.
	AdminCertPEM, AdminKeyPEM []byte
	// NodeClientCertPEM and NodeClientKeyPEM are the apiserver's identity
	// towards node agents (pods/log, exec, ... proxied to them).
	NodeClientCertPEM, NodeClientKeyPEM []byte
	// FrontProxyCAPEM is the front-proxy CA (FrontProxyCAFile); the
	// front-proxy client pair is the apiserver's identity towards
	// extension apiservers.
	FrontProxyCAPEM                                 []byte
	FrontProxyClientCertPEM, FrontProxyClientKeyPEM []byte
	// AgentToken is the bootstrap token (<id>.<secret>) agents present
	// to join; the server keeps its kube-system secret.
	AgentToken string
	// AgentTokenCreated says AgentToken was generated by this call (first
	// start, or a legacy token replaced): its secret is still to be made.
	AgentTokenCreated bool
}

// Ensure loads the credentials from opts.Dir, generating what is missing.
func Ensure(opts Options) (*Bundle, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("pki: Dir is required: %w", errdefs.ErrInvalidArgument)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	b := &Bundle{Dir: opts.Dir}
	cluster, err := b.ensureCA(CAFile, CAKeyFile, "berth-ca")
	if err != nil {
		return nil, err
	}
	b.CA, b.CAPEM, b.CAKey = cluster.cert, cluster.pem, cluster.key
	dns, ips := sans(opts.Hosts)
	b.ServingCertPEM, b.ServingKeyPEM, err = b.ensureLeaf(cluster, ServingCertFile, ServingKeyFile, leafSpec{
		cn: "berth-apiserver", dns: dns, ips: ips, usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	b.AdminCertPEM, b.AdminKeyPEM, err = b.ensureLeaf(cluster, AdminCertFile, AdminKeyFile, leafSpec{
		cn: AdminUser, orgs: []string{AdminGroup}, usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	b.NodeClientCertPEM, b.NodeClientKeyPEM, err = b.ensureLeaf(cluster, NodeClientCertFile, NodeClientKeyFile, leafSpec{
		cn: NodeClientUser, usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	if err := b.ensureEtcd(); err != nil {
		return nil, err
	}
	if err := b.ensureFrontProxy(); err != nil {
		return nil, err
	}
	if b.AgentToken, b.AgentTokenCreated, err = ensureToken(filepath.Join(opts.Dir, AgentTokenFile)); err != nil {
		return nil, err
	}
	return b, nil
}

// Path returns the path of one of the bundle's files.
func (b *Bundle) Path(name string) string { return filepath.Join(b.Dir, name) }

// WriteKubeconfig (re)writes admin.kubeconfig pointing at serverURL
// (e.g. "https://127.0.0.1:6443") with the admin client certificate embedded.
func (b *Bundle) WriteKubeconfig(serverURL string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["berth"] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthorityData: b.CAPEM}
	cfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{ClientCertificateData: b.AdminCertPEM, ClientKeyData: b.AdminKeyPEM}
	cfg.Contexts["berth"] = &clientcmdapi.Context{Cluster: "berth", AuthInfo: AdminUser, Namespace: "default"}
	cfg.CurrentContext = "berth"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("pki: kubeconfig: %w", err)
	}
	return writeAtomic(b.Path(KubeconfigFile), data, 0o600)
}

// EnsureClient loads the client certificate NAME.crt/NAME.key in dir, or
// issues it from the cluster CA there (which must exist: the server made
// it) when missing, expiring within a month or not from that CA: a
// component's own identity, user (CN) in groups (O). It returns the PEM
// certificate, key and CA certificate.
func EnsureClient(dir, name, user string, groups ...string) (certPEM, keyPEM, caPEM []byte, err error) {
	b := &Bundle{Dir: dir}
	_, certErr := os.Stat(b.Path(CAFile))
	_, keyErr := os.Stat(b.Path(CAKeyFile))
	if certErr != nil || keyErr != nil {
		return nil, nil, nil, fmt.Errorf("pki: no cluster CA in %s: %w", dir, errors.Join(certErr, keyErr))
	}
	ca, err := b.ensureCA(CAFile, CAKeyFile, "berth-ca")
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, keyPEM, err = b.ensureLeaf(ca, name+".crt", name+".key", leafSpec{
		cn: user, orgs: groups, usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return certPEM, keyPEM, ca.pem, err
}

// authority is a CA: its certificate (and PEM) and key.
type authority struct {
	cert *x509.Certificate
	pem  []byte
	key  crypto.Signer
}

// ensureEtcd makes the embedded etcd's CA, its member's certificate and the
// apiserver's client certificate, and removes the identity earlier berth
// versions gave etcd from the cluster CA.
func (b *Bundle) ensureEtcd() error {
	ca, err := b.ensureCA(EtcdCAFile, EtcdCAKeyFile, "berth-etcd-ca")
	if err != nil {
		return err
	}
	b.EtcdCA = ca.cert
	if _, _, err := b.ensureLeaf(ca, EtcdCertFile, EtcdKeyFile, leafSpec{
		cn: "berth-etcd", dns: []string{"localhost"}, ips: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return err
	}
	if _, _, err := b.ensureLeaf(ca, EtcdClientCertFile, EtcdClientKeyFile, leafSpec{
		cn: "kube-apiserver-etcd-client", usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return err
	}
	for _, f := range legacyEtcdFiles {
		if err := os.Remove(b.Path(f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pki: %w", err)
		}
	}
	return nil
}

// ensureFrontProxy loads or makes the front-proxy CA and the apiserver's
// client certificate from it.
func (b *Bundle) ensureFrontProxy() error {
	ca, err := b.ensureCA(FrontProxyCAFile, FrontProxyCAKeyFile, "berth-front-proxy-ca")
	if err != nil {
		return err
	}
	b.FrontProxyCAPEM = ca.pem
	b.FrontProxyClientCertPEM, b.FrontProxyClientKeyPEM, err = b.ensureLeaf(ca, FrontProxyClientCertFile, FrontProxyClientKeyFile, leafSpec{
		cn: FrontProxyClientName, usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return err
}

// ensureCA loads the CA in certName and keyName, generating it (common
// name cn) when both are missing.
func (b *Bundle) ensureCA(certName, keyName, cn string) (authority, error) {
	certPath, keyPath := b.Path(certName), b.Path(keyName)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		cert, key, err := parsePair(certPEM, keyPEM)
		if err != nil {
			return authority{}, fmt.Errorf("pki: CA %s in %s: %w", certName, b.Dir, err)
		}
		return authority{cert: cert, pem: certPEM, key: key}, nil
	}
	if !errors.Is(certErr, os.ErrNotExist) || !errors.Is(keyErr, os.ErrNotExist) {
		return authority{}, fmt.Errorf("pki: CA in %s is incomplete (%v, %v): remove both %s and %s to regenerate: %w",
			b.Dir, certErr, keyErr, certName, keyName, errdefs.ErrInvalidArgument)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return authority{}, fmt.Errorf("pki: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return authority{}, fmt.Errorf("pki: CA: %w", err)
	}
	certPEM, keyPEM, err = encodePair(der, key)
	if err != nil {
		return authority{}, err
	}
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return authority{}, err
	}
	if err := writeAtomic(certPath, certPEM, 0o644); err != nil {
		return authority{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return authority{}, fmt.Errorf("pki: CA: %w", err)
	}
	return authority{cert: cert, pem: certPEM, key: key}, nil
}

type leafSpec struct {
	cn    string
	orgs  []string
	dns   []string
	ips   []net.IP
	usage []x509.ExtKeyUsage
}

// ensureLeaf loads a leaf pair, or issues a new one when missing, not signed
// by the CA, expiring within a month, with another subject (common name or
// organizations), or lacking a requested SAN.
func (b *Bundle) ensureLeaf(ca authority, certName, keyName string, spec leafSpec) ([]byte, []byte, error) {
	certPath, keyPath := b.Path(certName), b.Path(keyName)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		if cert, _, err := parsePair(certPEM, keyPEM); err == nil && leafUsable(cert, ca.cert, spec) {
			return certPEM, keyPEM, nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  spec.usage,
		DNSNames:     spec.dns,
		IPAddresses:  spec.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", certName, err)
	}
	certPEM, keyPEM, err = encodePair(der, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	if err := writeAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

func leafUsable(cert, ca *x509.Certificate, spec leafSpec) bool {
	if cert.CheckSignatureFrom(ca) != nil || time.Until(cert.NotAfter) < 30*24*time.Hour {
		return false
	}
	if cert.Subject.CommonName != spec.cn || !slices.Equal(cert.Subject.Organization, spec.orgs) {
		return false
	}
	for _, d := range spec.dns {
		if !slices.Contains(cert.DNSNames, d) {
			return false
		}
	}
	for _, ip := range spec.ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// sans splits the default and extra hosts into DNS names and IP addresses.
func sans(extra []string) ([]string, []net.IP) {
	hosts := []string{"localhost", "127.0.0.1", "::1", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	hosts = append(hosts, extra...)
	var dns []string
	var ips []net.IP
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
		} else if !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

// legacyTokenRE matches the join token of berth versions before bootstrap
// tokens: 24 random bytes in hex.
var legacyTokenRE = regexp.MustCompile(`^[0-9a-f]{48}$`)

// ensureToken loads the join token from path, generating a bootstrap token
// (created true) when the file is missing or holds a legacy hex token.
func ensureToken(path string) (token string, created bool, err error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(data))
		if _, _, perr := authentication.ParseBootstrapToken(tok); perr == nil {
			return tok, false, nil
		} else if !legacyTokenRE.MatchString(tok) {
			return "", false, fmt.Errorf("pki: %s: %w (remove the file to generate a new token)", path, perr)
		}
	case !errors.Is(err, os.ErrNotExist):
		return "", false, fmt.Errorf("pki: %w", err)
	}
	tok, err := authentication.GenerateBootstrapToken()
	if err != nil {
		return "", false, fmt.Errorf("pki: %w", err)
	}
	if err := writeAtomic(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", false, err
	}
	return tok, true, nil
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("no PEM certificate: %w", errdefs.ErrInvalidArgument)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, fmt.Errorf("no PEM private key: %w", errdefs.ErrInvalidArgument)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("private key: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	return cert, key, nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) ([]byte, []byte, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: %w", err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}
