package certificatesigningrequest

import (
	"context"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"berth/internal/api/scheme"
)

func TestCreateRecordsTheRequester(t *testing.T) {
	ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "system:node:n1", UID: "u1",
		Groups: []string{"system:nodes"}, Extra: map[string][]string{"k": {"v"}}})
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Username: "forged", Groups: []string{"system:masters"}},
		Status: certificatesv1.CertificateSigningRequestStatus{Certificate: []byte("x")}}
	Kind.Strategy(scheme.New()).PrepareForCreate(ctx, csr)
	if csr.Spec.Username != "system:node:n1" || csr.Spec.UID != "u1" || len(csr.Spec.Groups) != 1 || csr.Spec.Groups[0] != "system:nodes" || csr.Spec.Extra["k"][0] != "v" {
		t.Errorf("spec identity = %+v", csr.Spec)
	}
	if len(csr.Status.Certificate) != 0 {
		t.Error("status not cleared on create")
	}
}

func TestSubresourcesKeepTheirFieldsApart(t *testing.T) {
	s := scheme.New()
	approved := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}
	old := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "a/b"},
		Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{approved}}}

	// /status (the signer) sets the certificate but can neither drop the
	// approval nor change the spec.
	n := old.DeepCopy()
	n.Spec.SignerName = "x/y"
	n.Status.Conditions = nil
	n.Status.Certificate = []byte("cert")
	Kind.StatusStrategy(s).PrepareForUpdate(context.Background(), n, old)
	if n.Spec.SignerName != "a/b" || len(n.Status.Conditions) != 1 || n.Status.Conditions[0].Type != certificatesv1.CertificateApproved || string(n.Status.Certificate) != "cert" {
		t.Errorf("status update = %+v %+v", n.Spec, n.Status)
	}

	// /approval sets conditions (stamped) but not the certificate.
	pending := &certificatesv1.CertificateSigningRequest{Spec: old.Spec}
	n = pending.DeepCopy()
	n.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
	n.Status.Certificate = []byte("cert")
	ApprovalKind.StatusStrategy(s).PrepareForUpdate(context.Background(), n, pending)
	if len(n.Status.Certificate) != 0 || len(n.Status.Conditions) != 1 || n.Status.Conditions[0].LastUpdateTime.IsZero() || n.Status.Conditions[0].LastTransitionTime.IsZero() {
		t.Errorf("approval update = %+v", n.Status)
	}

	// The main resource changes neither.
	n = old.DeepCopy()
	n.Status.Certificate = []byte("cert")
	Kind.Strategy(s).PrepareForUpdate(context.Background(), n, old)
	if len(n.Status.Certificate) != 0 {
		t.Error("main resource update changed the status")
	}
}

func TestConditionCell(t *testing.T) {
	exp := int32(3600)
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: metav1.NewTime(time.Now())},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "kubernetes.io/kubelet-serving", Username: "system:node:n1", ExpirationSeconds: &exp}}
	if got := Condition(csr); got != "Pending" {
		t.Errorf("pending: %q", got)
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved}}
	csr.Status.Certificate = []byte("c")
	if got := Condition(csr); got != "Approved,Issued" {
		t.Errorf("issued: %q", got)
	}
	cells, _ := Kind.Table.Row(csr, time.Now())
	if cells[2] != "kubernetes.io/kubelet-serving" || cells[3] != "system:node:n1" || cells[4] != "60m" || cells[5] != "Approved,Issued" {
		t.Errorf("row = %v", cells)
	}
}

// TestStatusUpdateKeepsTheConditionOrder: a /status update appending a
// condition after Approved keeps the order sent (the CSR conformance
// spec reads the last one), with Approved as stored.
func TestStatusUpdateKeepsTheConditionOrder(t *testing.T) {
	s := Kind.StatusStrategy(scheme.New())
	approved := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "E2E"}
	old := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
		{Type: "ApprovalPatch", Status: corev1.ConditionTrue}, approved}}}
	n := old.DeepCopy()
	n.Status.Conditions[1].Reason = "tampered"
	n.Status.Conditions = append(n.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: "StatusUpdate", Status: corev1.ConditionTrue})
	s.PrepareForUpdate(context.Background(), n, old)
	got := n.Status.Conditions
	if len(got) != 3 || got[1].Type != certificatesv1.CertificateApproved || got[1].Reason != "E2E" || got[2].Type != "StatusUpdate" {
		t.Fatalf("conditions %+v", got)
	}
}
