package pki

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

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
	if len(b.AgentToken) < 32 {
		t.Fatalf("agent token %q too short", b.AgentToken)
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

func TestValidToken(t *testing.T) {
	b, err := Ensure(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !b.ValidToken(b.AgentToken) || b.ValidToken("") || b.ValidToken(b.AgentToken+"x") {
		t.Fatal("ValidToken accepts or refuses the wrong tokens")
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
