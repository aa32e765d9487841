package authz

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth/internal/testpki"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate/csr"
)

// requestNodeClientCert creates a kube-apiserver-client-kubelet CSR for
// node as c's identity and returns its name and UID, and the PEM key the
// certificate will be for.
func requestNodeClientCert(ctx context.Context, c kubernetes.Interface, node string) (string, types.UID, []byte, error) {
	reqPEM, key, err := testpki.CSR("system:node:"+node, "system:nodes")
	if err != nil {
		return "", "", nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", nil, err
	}
	name, uid, err := csr.RequestCertificateWithContext(ctx, c, reqPEM, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil,
		[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, key)
	return name, uid, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), err
}

func hasCSRCondition(r *certificatesv1.CertificateSigningRequest, typ certificatesv1.RequestConditionType) bool {
	for _, c := range r.Status.Conditions {
		if c.Type == typ {
			return true
		}
	}
	return false
}

// The CSR approver asks authorization, not group membership: a node client
// request from a user who may create CSRs but not
// certificatesigningrequests/nodeclient stays pending (not denied) while a
// bootstrap token's request made after it is approved; once the user is
// bound to the nodeclient role, the request is approved and signed.
func TestCSRApprovalAsksAuthorization(t *testing.T) {
	ctx := context.Background()
	const user = "authz-csr-requester"
	rbacClient := shared.admin.RbacV1().ClusterRoleBindings()
	bind := func(name, role string) {
		t.Helper()
		_, err := rbacClient.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rbacClient.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	bind("test-csr-requester-bootstrapper", "system:node-bootstrapper")
	requester := clientFor(t, shared.certConfig(t, user))

	// The binding reaches the authorizer's cache shortly.
	var pending string
	deadline := time.Now().Add(30 * time.Second)
	for {
		name, _, _, err := requestNodeClientCert(ctx, requester, "authz-csr-user-node")
		if err == nil {
			pending = name
			break
		}
		if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			t.Fatalf("creating a CSR as %s: %v", user, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() {
		_ = shared.admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), pending, metav1.DeleteOptions{})
	})

	raw, err := os.ReadFile(filepath.Join(shared.Dir, "agent-token"))
	if err != nil {
		t.Fatal(err)
	}
	joiner := clientFor(t, shared.tokenConfig(strings.TrimSpace(string(raw))))
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	joined, uid, _, err := requestNodeClientCert(wctx, joiner, "authz-csr-token-node")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.admin.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), joined, metav1.DeleteOptions{})
	})
	if _, err := csr.WaitForCertificate(wctx, joiner, joined, uid); err != nil {
		t.Fatalf("the bootstrap token's CSR: %v", err)
	}
	csrs := shared.admin.CertificatesV1().CertificateSigningRequests()
	got, err := csrs.Get(ctx, pending, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 0 || len(got.Status.Certificate) != 0 {
		t.Fatalf("CSR of %s without the nodeclient permission: conditions %+v, want pending", user, got.Status.Conditions)
	}

	bind("test-csr-requester-nodeclient", "system:certificates.k8s.io:certificatesigningrequests:nodeclient")
	deadline = time.Now().Add(60 * time.Second)
	for {
		got, err = csrs.Get(ctx, pending, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if hasCSRCondition(got, certificatesv1.CertificateApproved) && len(got.Status.Certificate) > 0 {
			break
		}
		if hasCSRCondition(got, certificatesv1.CertificateDenied) || time.Now().After(deadline) {
			t.Fatalf("CSR of %s bound to the nodeclient role: %+v, want approved and signed", user, got.Status)
		}
		// A change makes the approver look again at once (it would at its
		// next resync anyway).
		if got.Labels == nil {
			got.Labels = map[string]string{}
		}
		got.Labels["touched"] = time.Now().Format("150405.000000")
		if _, err := csrs.Update(ctx, got, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range got.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && (c.Reason != "AutoApproved" || !strings.Contains(c.Message, "SubjectAccessReview")) {
			t.Errorf("approval condition %+v", c)
		}
	}
}
