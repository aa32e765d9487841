package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/authorization/rbac"
	"berth/controlplane/authorization/rbac/bootstrap"
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

// A node client request is recognized by the signer's rules; renewal
// (CN = requester) asks selfnodeclient first, anything else only nodeclient.
func TestNodeClientChecks(t *testing.T) {
	good := request(t, nodeSubj, nil, nil)
	for _, tc := range []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		req  *x509.CertificateRequest
		want []string // subresources asked, in order; nil: not recognized
	}{
		{"join token", csrFor(KubeletClientSigner, "system:bootstrap:abcdef", nil, clientUsages), good, []string{"nodeclient"}},
		{"renewal by the node", csrFor(KubeletClientSigner, "system:node:n1", nil, clientUsages), good, []string{"selfnodeclient", "nodeclient"}},
		{"missing client auth", csrFor(KubeletClientSigner, "system:node:n1", nil, clientUsages[:1:1]), good, nil},
		{"digital signature and client auth", csrFor(KubeletClientSigner, "system:node:n1", nil,
			[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}), good, []string{"selfnodeclient", "nodeclient"}},
		{"another node", csrFor(KubeletClientSigner, "system:node:n2", nil, clientUsages), good, []string{"nodeclient"}},
		{"server auth usage", csrFor(KubeletClientSigner, "system:node:n1", nil, append(clientUsages, certificatesv1.UsageServerAuth)), good, nil},
		{"wrong organization", csrFor(KubeletClientSigner, "system:node:n1", nil, clientUsages),
			request(t, pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:masters"}}, nil, nil), nil},
		{"not a node name", csrFor(KubeletClientSigner, "admin", nil, clientUsages),
			request(t, pkix.Name{CommonName: "admin", Organization: []string{"system:nodes"}}, nil, nil), nil},
		{"SANs", csrFor(KubeletClientSigner, "system:node:n1", nil, clientUsages), request(t, nodeSubj, []string{"n1"}, nil), nil},
		{"other signer", csrFor("example.com/signer", "system:node:n1", nil, clientUsages), good, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks, err := NodeClientChecks(tc.csr, tc.req)
			if tc.want == nil {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || checks != nil {
					t.Fatalf("NodeClientChecks = %v, %v; want ErrInvalidArgument", checks, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range checks {
				a := c.Attributes
				if a.Group != "certificates.k8s.io" || a.Resource != "certificatesigningrequests" || a.Verb != "create" || a.Name != "" || a.Namespace != "" || c.Message == "" {
					t.Errorf("check %+v", c)
				}
				got = append(got, a.Subresource)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("subresources %v, want %v", got, tc.want)
			}
		})
	}
}

// rbacReviews answers SubjectAccessReviews on client with berth's RBAC
// authorizer over the default bootstrap policy plus extra bindings, and
// records the reviews asked.
func rbacReviews(t *testing.T, client *fake.Clientset, extra ...*rbacv1.ClusterRoleBinding) *[]authorizationv1.SubjectAccessReviewSpec {
	t.Helper()
	roles := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	bindings := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, r := range bootstrap.ClusterRoles() {
		_ = roles.Add(r)
	}
	for _, b := range append(bootstrap.ClusterRoleBindings(), extra...) {
		_ = bindings.Add(b)
	}
	empty := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	authz, err := rbac.New(rbac.Config{
		Roles: rbaclisters.NewRoleLister(empty), RoleBindings: rbaclisters.NewRoleBindingLister(empty),
		ClusterRoles: rbaclisters.NewClusterRoleLister(roles), ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(bindings),
	})
	if err != nil {
		t.Fatal(err)
	}
	var asked []authorizationv1.SubjectAccessReviewSpec
	client.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		asked = append(asked, sar.Spec)
		ra := sar.Spec.ResourceAttributes
		extra := map[string][]string{}
		for k, v := range sar.Spec.Extra {
			extra[k] = v
		}
		d, _, err := authz.Authorize(context.Background(), authorizer.AttributesRecord{
			User: &user.DefaultInfo{Name: sar.Spec.User, UID: sar.Spec.UID, Groups: sar.Spec.Groups, Extra: extra},
			Verb: ra.Verb, APIGroup: ra.Group, Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name,
			Namespace: ra.Namespace, ResourceRequest: true,
		})
		if err != nil {
			return true, nil, err
		}
		sar.Status.Allowed = d == authorizer.DecisionAllow
		return true, sar, nil
	})
	return &asked
}

// Node client requests are approved when authorization (RBAC with the
// default policy) lets the requester create the selfnodeclient or
// nodeclient subresource, not by group membership alone; the rest stay
// pending.
func TestDecideAsksAuthorization(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	// alice may approve new nodes' certificates through a binding of her own.
	asked := rbacReviews(t, client, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-nodeclient"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: bootstrap.NodeClientCSRRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	})
	c, err := New(Config{Client: client, Signer: testCA(t, time.Hour), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	token := []string{"system:bootstrappers", "system:authenticated"}
	nodes := []string{NodesGroup, "system:authenticated"}
	good := request(t, nodeSubj, nil, nil)
	for _, tc := range []struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		approve string // the approval message's start; "" leaves it pending
		asked   []string
	}{
		{"bootstrap token", csrFor(KubeletClientSigner, "system:bootstrap:abcdef", token, clientUsages), "Auto approving kubelet client", []string{"nodeclient"}},
		{"renewal by the node", csrFor(KubeletClientSigner, "system:node:n1", nodes, clientUsages), "Auto approving self kubelet client", []string{"selfnodeclient"}},
		{"another node's certificate", csrFor(KubeletClientSigner, "system:node:n2", nodes, clientUsages), "", []string{"nodeclient"}},
		{"the node's name without its group", csrFor(KubeletClientSigner, "system:node:n1", []string{"system:authenticated"}, clientUsages), "", []string{"selfnodeclient", "nodeclient"}},
		{"an ordinary user", csrFor(KubeletClientSigner, "bob", []string{"system:authenticated"}, clientUsages), "", []string{"nodeclient"}},
		{"a user bound to the nodeclient role", csrFor(KubeletClientSigner, "alice", []string{"system:authenticated"}, clientUsages), "Auto approving kubelet client", []string{"nodeclient"}},
		{"not a node client request", csrFor(KubeletClientSigner, "system:bootstrap:abcdef", token, append(clientUsages, certificatesv1.UsageServerAuth)), "", nil},
		{"a signer not approved here", csrFor("example.com/signer", "system:bootstrap:abcdef", token, clientUsages), "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			*asked = nil
			tc.csr.Spec.UID = "uid-1"
			tc.csr.Spec.Extra = map[string]certificatesv1.ExtraValue{"example.com/k": {"v"}}
			d, err := c.decide(ctx, tc.csr, good, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.Approve != (tc.approve != "") || !strings.HasPrefix(d.Message, tc.approve) {
				t.Fatalf("decision %+v, want approve with %q", d, tc.approve)
			}
			if d.Approve && d.Reason != ApprovedReason {
				t.Errorf("reason %q", d.Reason)
			}
			if !d.Approve && d.Message == "" {
				t.Error("a request left pending needs a message saying why")
			}
			var subs []string
			for _, spec := range *asked {
				if spec.User != tc.csr.Spec.Username || spec.UID != "uid-1" || !slices.Equal(spec.Groups, tc.csr.Spec.Groups) ||
					!slices.Equal(spec.Extra["example.com/k"], []string{"v"}) {
					t.Errorf("review asked for %+v, want the requester of %+v", spec, tc.csr.Spec)
				}
				subs = append(subs, spec.ResourceAttributes.Subresource)
			}
			if !slices.Equal(subs, tc.asked) {
				t.Fatalf("reviews asked for %v, want %v", subs, tc.asked)
			}
		})
	}

	// A review that fails is an error (retried), not a refusal.
	client.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("authorizer not ready")
	})
	if _, err := c.decide(ctx, csrFor(KubeletClientSigner, "system:bootstrap:abcdef", token, clientUsages), good, nil); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("decide with a failing review: %v, want the 503", err)
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
				groups = []string{"system:bootstrappers"}
			}
			d := ApproveServing(csrFor(KubeletServingSigner, tc.user, groups, servingUsages), tc.req, tc.node)
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
