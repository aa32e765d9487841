package pki

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"berth/controlplane/authentication"
	"berth/internal/errdefs"
)

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnsureGeneratesThenReuses(t *testing.T) {
	dir := t.TempDir()
	b, err := Ensure(Options{Dir: dir, Hosts: []string{"10.1.2.3", "berth.example"}})
	if err != nil {
		t.Fatal(err)
	}
	serving := parseCert(t, b.ServingCertPEM)
	if err := serving.CheckSignatureFrom(b.CA); err != nil {
		t.Fatalf("serving cert not signed by the CA: %v", err)
	}
	for _, ip := range []string{"127.0.0.1", "10.1.2.3"} {
		if !slices.ContainsFunc(serving.IPAddresses, net.ParseIP(ip).Equal) {
			t.Errorf("serving cert lacks IP SAN %s: %v", ip, serving.IPAddresses)
		}
	}
	for _, d := range []string{"localhost", "berth.example"} {
		if !slices.Contains(serving.DNSNames, d) {
			t.Errorf("serving cert lacks DNS SAN %s: %v", d, serving.DNSNames)
		}
	}
	admin := parseCert(t, b.AdminCertPEM)
	if admin.Subject.CommonName != AdminUser || !slices.Equal(admin.Subject.Organization, []string{AdminGroup}) {
		t.Fatalf("admin subject %v", admin.Subject)
	}
	if _, _, err := authentication.ParseBootstrapToken(b.AgentToken); err != nil {
		t.Fatalf("agent token %q: %v", b.AgentToken, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, AgentTokenFile)); err != nil || string(data) != b.AgentToken+"\n" {
		t.Fatalf("agent-token file %q %v, want %q", data, err, b.AgentToken)
	}
	for _, f := range []string{CAKeyFile, ServingKeyFile, AdminKeyFile, AgentTokenFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, err %v; want 0600", f, st.Mode(), err)
		}
	}

	again, err := Ensure(Options{Dir: dir, Hosts: []string{"10.1.2.3"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(again.CAPEM) != string(b.CAPEM) || string(again.ServingCertPEM) != string(b.ServingCertPEM) ||
		string(again.AdminCertPEM) != string(b.AdminCertPEM) || again.AgentToken != b.AgentToken {
		t.Fatal("second Ensure did not reuse the credentials")
	}
	if !b.AgentTokenCreated || again.AgentTokenCreated {
		t.Fatalf("AgentTokenCreated: first %v, second %v; want true, false", b.AgentTokenCreated, again.AgentTokenCreated)
	}

	// A new host re-issues the serving certificate from the same CA.
	third, err := Ensure(Options{Dir: dir, Hosts: []string{"10.9.9.9"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(third.CAPEM) != string(b.CAPEM) {
		t.Fatal("CA changed")
	}
	if string(third.ServingCertPEM) == string(b.ServingCertPEM) {
		t.Fatal("serving certificate not re-issued for a new host")
	}
	if c := parseCert(t, third.ServingCertPEM); !slices.ContainsFunc(c.IPAddresses, net.ParseIP("10.9.9.9").Equal) {
		t.Fatalf("re-issued cert lacks the new host: %v", c.IPAddresses)
	}
}

// The join token is a bootstrap token: <6>.<16> characters of [a-z0-9].
// The hex token of earlier versions is replaced; anything else is refused
// with an error naming the file.
func TestAgentToken(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)
	seen := map[string]bool{}
	for range 5 {
		b, err := Ensure(Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if !re.MatchString(b.AgentToken) || seen[b.AgentToken] {
			t.Fatalf("agent token %q: not a fresh bootstrap token", b.AgentToken)
		}
		seen[b.AgentToken] = true
	}

	for _, tc := range []struct {
		name, content string
		keep, fail    bool
	}{
		{"bootstrap token", "abcdef.0123456789abcdef\n", true, false},
		{"legacy hex token", "0123456789abcdef0123456789abcdef0123456789abcdef\n", false, false},
		{"empty", "\n", false, true},
		{"garbage", "not-a-token\n", false, true},
		{"upper case", "ABCDEF.0123456789ABCDEF\n", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, AgentTokenFile)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			b, err := Ensure(Options{Dir: dir})
			if tc.fail {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Ensure = %v, want ErrInvalidArgument naming %s", err, path)
				}
				if data, _ := os.ReadFile(path); string(data) != tc.content {
					t.Fatalf("a refused token file was changed: %q", data)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.keep != (b.AgentToken+"\n" == tc.content) || tc.keep == b.AgentTokenCreated || !re.MatchString(b.AgentToken) {
				t.Fatalf("token %q from file %q (keep %v)", b.AgentToken, tc.content, tc.keep)
			}
			if data, err := os.ReadFile(path); err != nil || string(data) != b.AgentToken+"\n" {
				t.Fatalf("agent-token file %q %v, want %q", data, err, b.AgentToken)
			}
		})
	}
}

func TestWriteKubeconfig(t *testing.T) {
	b, err := Ensure(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteKubeconfig("https://127.0.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", b.Path(KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || string(cfg.CAData) != string(b.CAPEM) || string(cfg.CertData) != string(b.AdminCertPEM) {
		t.Fatalf("kubeconfig: host %q, CA/cert embedded: %v %v", cfg.Host, len(cfg.CAData) > 0, len(cfg.CertData) > 0)
	}
}

func TestEnsureRejectsHalfACA(t *testing.T) {
	dir := t.TempDir()
	if _, err := Ensure(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	_, err := Ensure(Options{Dir: dir})
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("CA without its key: %v, want ErrInvalidArgument", err)
	}
	if _, err := Ensure(Options{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("no Dir: %v", err)
	}
}

// TestNodeClientCertificateLeavesSystemMasters: the apiserver's client
// certificate towards agents is kube-apiserver-kubelet-client in no group,
// and one from an earlier berth (in system:masters) is re-issued.
func TestNodeClientCertificateLeavesSystemMasters(t *testing.T) {
	dir := t.TempDir()
	b, err := Ensure(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// As earlier berth versions issued it.
	cluster := authority{cert: b.CA, pem: b.CAPEM, key: b.CAKey}
	if _, _, err := b.ensureLeaf(cluster, "old.crt", "old.key", leafSpec{cn: NodeClientUser, orgs: []string{AdminGroup},
		usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][2]string{{"old.crt", NodeClientCertFile}, {"old.key", NodeClientKeyFile}} {
		if err := os.Rename(filepath.Join(dir, f[0]), filepath.Join(dir, f[1])); err != nil {
			t.Fatal(err)
		}
	}
	b, err = Ensure(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := parseCert(t, b.NodeClientCertPEM)
	if c.Subject.CommonName != "kube-apiserver-kubelet-client" || len(c.Subject.Organization) != 0 {
		t.Fatalf("node client certificate subject %v, want CN=kube-apiserver-kubelet-client in no group", c.Subject)
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, NodeClientCertFile))
	if err != nil || string(onDisk) != string(b.NodeClientCertPEM) {
		t.Fatalf("re-issued certificate not written: %v", err)
	}
}

// etcd has a CA of its own: its member's and the apiserver's client
// certificates chain to it and not to the cluster CA, and nothing the
// cluster CA signs chains to it. A data dir of an earlier berth (etcd's
// certificate from the cluster CA) gets them, its old pair removed.
func TestEtcdHasItsOwnCA(t *testing.T) {
	dir := t.TempDir()
	for _, f := range legacyEtcdFiles {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Ensure(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	etcdCA := parseCert(t, mustRead(t, filepath.Join(dir, EtcdCAFile)))
	if etcdCA.Equal(b.CA) || !b.EtcdCA.Equal(etcdCA) {
		t.Fatal("etcd's CA is the cluster CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(etcdCA)
	for _, f := range []string{EtcdCertFile, EtcdClientCertFile} {
		c := parseCert(t, mustRead(t, filepath.Join(dir, f)))
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s does not chain to etcd's CA as a client: %v", f, err)
		}
		if c.CheckSignatureFrom(b.CA) == nil {
			t.Errorf("%s is signed by the cluster CA", f)
		}
	}
	for _, pemBytes := range [][]byte{b.AdminCertPEM, b.NodeClientCertPEM} {
		if _, err := parseCert(t, pemBytes).Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
			t.Error("a cluster-CA certificate chains to etcd's CA")
		}
	}
	for _, f := range legacyEtcdFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the earlier etcd identity %s is still there: %v", f, err)
		}
	}
	for _, f := range []string{EtcdCAKeyFile, EtcdKeyFile, EtcdClientKeyFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, st, err)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestEnsureClient(t *testing.T) {
	dir := t.TempDir()
	if _, _, _, err := EnsureClient(dir, "component", "system:component"); err == nil {
		t.Fatal("a client certificate issued without a CA")
	}
	b, err := Ensure(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, caPEM, err := EnsureClient(dir, "component", "system:component", "g1")
	if err != nil {
		t.Fatal(err)
	}
	cert := parseCert(t, certPEM)
	if cert.Subject.CommonName != "system:component" || !slices.Equal(cert.Subject.Organization, []string{"g1"}) ||
		!slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cert.CheckSignatureFrom(b.CA) != nil {
		t.Fatalf("client certificate %v usages %v", cert.Subject, cert.ExtKeyUsage)
	}
	if string(caPEM) != string(b.CAPEM) {
		t.Error("CA PEM differs from the bundle's")
	}
	if fi, err := os.Stat(filepath.Join(dir, "component.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	again, againKey, _, err := EnsureClient(dir, "component", "system:component", "g1")
	if err != nil || string(again) != string(certPEM) || string(againKey) != string(keyPEM) {
		t.Fatalf("second call issued anew: %v", err)
	}
}
