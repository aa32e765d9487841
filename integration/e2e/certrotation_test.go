package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	"berth/agent/bootstrap"
	"berth/integration/harness"
	"berth/integration/nodeenv"
	"berth/internal/testpki"
)

// TestNodeCertificatesAreRenewedBeforeExpiry starts an agent whose client
// and serving certificates (signed by the cluster CA, as the CSR signers
// sign them) are past their renewal point — 70 % of their lifetime — but
// still valid. The agent renews both through the CSR API as the node itself
// (system:node:NAME), writes the new pairs, and goes on working with them
// without a restart: its Lease keeps being renewed with the new client
// certificate and its API serves the new serving certificate.
func TestNodeCertificatesAreRenewedBeforeExpiry(t *testing.T) {
	c := harness.StartServer(t, harness.ServerOptions{})
	if !bootstrap.ServesCSRs(c.Client) {
		t.Fatal("the apiserver serves no CSR API")
	}
	ctx := context.Background()
	c.Node = "e2e-renew-node"
	dir := t.TempDir()
	rootDir := filepath.Join(dir, "agent")
	pki := filepath.Join(rootDir, "pki")
	// Valid for 2 more hours (so the agent keeps them at start), issued 20
	// hours ago: past 70 % of the 22 hours.
	notBefore, notAfter := time.Now().Add(-20*time.Hour), time.Now().Add(2*time.Hour)
	oldClient := issueNodeCert(t, c.DataDir, filepath.Join(pki, "kubelet-client"), c.Node, false, notBefore, notAfter)
	oldServing := issueNodeCert(t, c.DataDir, filepath.Join(pki, "kubelet-serving"), c.Node, true, notBefore, notAfter)

	agent, port := c.StartAgent(t, nodeenv.Current(), c.Node, rootDir, "/berth-e2e-renew",
		"--cni-conf-dir", filepath.Join(dir, "net.d"))
	for _, want := range []struct {
		signer string
		old    *x509.Certificate
		file   string
	}{
		{certificatesv1.KubeAPIServerClientKubeletSignerName, oldClient, "kubelet-client.crt"},
		{certificatesv1.KubeletServingSignerName, oldServing, "kubelet-serving.crt"},
	} {
		harness.WaitFor(t, 90*time.Second, "a "+want.signer+" CSR issued to the node itself", func() (bool, string) {
			csrs, err := c.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			var seen []string
			for _, r := range csrs.Items {
				seen = append(seen, r.Spec.SignerName+" by "+r.Spec.Username)
				if r.Spec.SignerName == want.signer && r.Spec.Username == "system:node:"+c.Node && len(r.Status.Certificate) > 0 {
					return true, ""
				}
			}
			return false, fmt.Sprint(seen)
		})
		harness.WaitFor(t, 30*time.Second, "the renewed "+want.file+" on disk", func() (bool, string) {
			certs, err := certutil.CertsFromFile(filepath.Join(pki, want.file))
			if err != nil {
				return false, err.Error()
			}
			return certs[0].SerialNumber.Cmp(want.old.SerialNumber) != 0 && certs[0].NotBefore.After(want.old.NotBefore), certs[0].SerialNumber.String()
		})
	}
	if !strings.Contains(agent.Log(), "renewed the node certificate") {
		t.Errorf("the agent's log does not mention the renewal")
	}

	// The client goes on with the new certificate: the Lease is renewed
	// after the rotation.
	rotated := time.Now()
	harness.WaitFor(t, 60*time.Second, "the Lease renewed after the rotation", func() (bool, string) {
		l, err := c.Client.CoordinationV1().Leases("kube-node-lease").Get(ctx, c.Node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if l.Spec.RenewTime == nil {
			return false, "no renewTime"
		}
		return l.Spec.RenewTime.After(rotated), l.Spec.RenewTime.String()
	})
	// The agent API serves the renewed serving certificate on new
	// connections.
	renewed, err := certutil.CertsFromFile(filepath.Join(pki, "kubelet-serving.crt"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	served := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	if served.SerialNumber.Cmp(renewed[0].SerialNumber) != 0 {
		t.Errorf("the agent API serves certificate %s, want the renewed %s", served.SerialNumber, renewed[0].SerialNumber)
	}
	if agent.Exited() {
		t.Fatalf("the agent exited:\n%s", agent.Log())
	}
}

// issueNodeCert writes base.crt and base.key: a node certificate for node
// (client: CN=system:node:NODE, O=system:nodes; serving: also DNS NODE and
// IP 127.0.0.1) signed by the cluster CA in dataDir, valid from notBefore
// to notAfter.
func issueNodeCert(t *testing.T, dataDir, base, node string, serving bool, notBefore, notAfter time.Time) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:   pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if serving {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames, tmpl.IPAddresses = []string{node}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	certPEM, keyPEM := testpki.LoadCA(t, dataDir).Sign(t, tmpl)
	if err := os.MkdirAll(filepath.Dir(base), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".key", keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".crt", certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
