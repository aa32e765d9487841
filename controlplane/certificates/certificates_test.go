package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/errdefs"
)

var (
	clientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	nodeSubj      = pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
)

func request(t *testing.T, subj pkix.Name, dns []string, ips []net.IP) *x509.CertificateRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subj, DNSNames: dns, IPAddresses: ips}, key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func csrFor(signer, user string, groups []string, usages []certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		SignerName: signer, Username: user, Groups: groups, Usages: usages}}
}

func TestApproveKubeletClient(t *testing.T) {
	token := []string{BootstrappersGroup, "system:authenticated"}
	node := []string{NodesGroup, "system:authenticated"}
	good := request(t, nodeSubj, nil, nil)
	for _, tc := range []struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		req     *x509.CertificateRequest
		approve bool
	}{
		{"join token", csrFor(KubeletClientSigner, "system:berth-agent", token, clientUsages), good, true},
		{"renewal by the node", csrFor(KubeletClientSigner, "system:node:n1", node, clientUsages), good, true},
		{"without key encipherment", csrFor(KubeletClientSigner, "system:node:n1", node, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}), good, true},
		{"another node", csrFor(KubeletClientSigner, "system:node:n2", node, clientUsages), good, false},
		{"an ordinary user", csrFor(KubeletClientSigner, "alice", []string{"system:authenticated"}, clientUsages), good, false},
		{"server auth usage", csrFor(KubeletClientSigner, "system:berth-agent", token, append(clientUsages, certificatesv1.UsageServerAuth)), good, false},
		{"missing client auth", csrFor(KubeletClientSigner, "system:berth-agent", token, clientUsages[:2]), good, false},
		{"wrong organization", csrFor(KubeletClientSigner, "system:berth-agent", token, clientUsages),
			request(t, pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:masters"}}, nil, nil), false},
		{"not a node name", csrFor(KubeletClientSigner, "system:berth-agent", token, clientUsages),
			request(t, pkix.Name{CommonName: "admin", Organization: []string{"system:nodes"}}, nil, nil), false},
		{"SANs", csrFor(KubeletClientSigner, "system:berth-agent", token, clientUsages), request(t, nodeSubj, []string{"n1"}, nil), false},
		{"other signer", csrFor("example.com/signer", "system:berth-agent", token, clientUsages), good, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Approve(tc.csr, tc.req, nil)
			if d.Approve != tc.approve {
				t.Fatalf("Approve = %+v, want approve=%v", d, tc.approve)
			}
			if d.Approve && d.Reason != ApprovedReason {
				t.Errorf("reason %q", d.Reason)
			}
			if !d.Approve && d.Message == "" {
				t.Error("a request left pending needs a message saying why")
			}
		})
	}
}

func TestApproveKubeletServing(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "n1.lan"}}}}
	self := []string{NodesGroup}
	ok := request(t, nodeSubj, []string{"n1", "n1.lan"}, []net.IP{net.ParseIP("10.0.0.5")})
	for _, tc := range []struct {
		name    string
		user    string
		req     *x509.CertificateRequest
		node    *corev1.Node
		approve bool
	}{
		{"own name and addresses", "system:node:n1", ok, node, true},
		{"node not registered", "system:node:n1", ok, nil, false},
		{"foreign IP", "system:node:n1", request(t, nodeSubj, nil, []net.IP{net.ParseIP("10.0.0.6")}), node, false},
		{"foreign DNS name", "system:node:n1", request(t, nodeSubj, []string{"evil.example.com"}, nil), node, false},
		{"no SANs", "system:node:n1", request(t, nodeSubj, nil, nil), node, false},
		{"requested by the join token", "system:berth-agent", ok, node, false},
		{"requested by another node", "system:node:n2", ok, node, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			groups := self
			if tc.user == "system:berth-agent" {
				groups = []string{BootstrappersGroup}
			}
			d := Approve(csrFor(KubeletServingSigner, tc.user, groups, servingUsages), tc.req, tc.node)
			if d.Approve != tc.approve {
				t.Fatalf("Approve = %+v, want approve=%v", d, tc.approve)
			}
		})
	}
}

func testCA(t *testing.T, validity time.Duration) Signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(validity), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return Signer{CA: ca, Key: key}
}

func TestSign(t *testing.T) {
	s := testCA(t, 10*365*24*time.Hour)
	now := time.Now()
	req := request(t, nodeSubj, []string{"n1"}, []net.IP{net.ParseIP("10.0.0.5")})
	hour := int32(3600)
	certPEM, err := s.Sign(req, servingUsages, &hour, now)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:n1" || cert.Subject.Organization[0] != "system:nodes" || cert.DNSNames[0] != "n1" || !cert.IPAddresses[0].Equal(net.ParseIP("10.0.0.5")) {
		t.Errorf("subject/SANs: %v %v %v", cert.Subject, cert.DNSNames, cert.IPAddresses)
	}
	if cert.KeyUsage != x509.KeyUsageDigitalSignature || len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("usages %v %v", cert.KeyUsage, cert.ExtKeyUsage)
	}
	if !cert.NotAfter.Equal(now.Add(time.Hour).Truncate(time.Second)) || !cert.NotBefore.Equal(now.Add(-backdate).Truncate(time.Second)) {
		t.Errorf("validity %v – %v, want %v – %v", cert.NotBefore, cert.NotAfter, now.Add(-backdate), now.Add(time.Hour))
	}
	if err := cert.CheckSignatureFrom(s.CA); err != nil {
		t.Errorf("not signed by the CA: %v", err)
	}

	// The certificate never outlives the CA.
	short := testCA(t, 2*time.Hour)
	certPEM, err = short.Sign(req, servingUsages, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	block, _ = pem.Decode(certPEM)
	cert, _ = x509.ParseCertificate(block.Bytes)
	if cert.NotAfter.After(short.CA.NotAfter) {
		t.Errorf("NotAfter %v beyond the CA's %v", cert.NotAfter, short.CA.NotAfter)
	}
	if _, err := s.Sign(req, []certificatesv1.KeyUsage{"code signing"}, nil, now); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("unsupported usage: %v, want ErrInvalidArgument", err)
	}
}

func TestDuration(t *testing.T) {
	secs := func(s int32) *int32 { return &s }
	for _, tc := range []struct {
		exp  *int32
		max  time.Duration
		want time.Duration
	}{
		{nil, 0, DefaultMaxDuration},
		{secs(60), 0, 10 * time.Minute},
		{secs(3600), 0, time.Hour},
		{secs(3600), 30 * time.Minute, 30 * time.Minute},
		{secs(1 << 30), 0, DefaultMaxDuration},
	} {
		if got := Duration(tc.exp, tc.max); got != tc.want {
			t.Errorf("Duration(%v, %v) = %v, want %v", tc.exp, tc.max, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	if _, err := Check("example.com/x", request(t, nodeSubj, nil, nil), clientUsages); !errors.Is(err, errdefs.ErrUnimplemented) {
		t.Errorf("unknown signer: %v", err)
	}
	if name, err := Check(KubeletClientSigner, request(t, nodeSubj, nil, nil), clientUsages); err != nil || name != "n1" {
		t.Errorf("client: %q %v", name, err)
	}
	if _, err := Check(KubeletServingSigner, request(t, nodeSubj, nil, nil), servingUsages); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("serving without SANs: %v", err)
	}
}
