package authz

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate/csr"
)

// whoami is the caller's identity as the server sees it.
func whoami(t *testing.T, cfgToken string) (authenticationv1.UserInfo, error) {
	t.Helper()
	c := clientFor(t, shared.tokenConfig(cfgToken))
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// bootstrapSecret is a bootstrap.kubernetes.io/token secret for id.secret.
func bootstrapSecret(id, secret string, expires time.Time, usageAuth string) *corev1.Secret {
	data := map[string][]byte{"token-id": []byte(id), "token-secret": []byte(secret), "usage-bootstrap-authentication": []byte(usageAuth)}
	if !expires.IsZero() {
		data["expiration"] = []byte(expires.UTC().Format(time.RFC3339))
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type: "bootstrap.kubernetes.io/token", Data: data}
}

// The agent join token the server wrote is a bootstrap token: it
// authenticates as system:bootstrap:<id> and may do what the kubelet's TLS
// bootstrap needs (a node client certificate through an auto-approved CSR),
// and nothing else; the certificate then acts as the node.
func TestAgentJoinTokenIsBootstrapToken(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join(shared.Dir, "agent-token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	id, _, ok := strings.Cut(token, ".")
	if !ok || len(id) != 6 || len(token) != 23 {
		t.Fatalf("agent token %q is not <6>.<16>", token)
	}
	sec, err := shared.admin.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{})
	if err != nil || sec.Type != "bootstrap.kubernetes.io/token" || string(sec.Data["usage-bootstrap-authentication"]) != "true" {
		t.Fatalf("bootstrap token secret: %v %v", sec, err)
	}
	u, err := whoami(t, token)
	if err != nil || u.Username != "system:bootstrap:"+id || !slices.Equal(u.Groups, []string{"system:bootstrappers", "system:authenticated"}) {
		t.Fatalf("join token identity: %+v %v", u, err)
	}

	c := clientFor(t, shared.tokenConfig(token))
	if _, err := c.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("join token listing secrets: %v, want 403", err)
	}
	if _, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("join token listing nodes: %v, want 403", err)
	}

	// TLS bootstrap as the agent does it (client-go's csr helpers).
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	name, uid, keyPEM, err := requestNodeClientCert(wctx, c, "authz-boot")
	if err != nil {
		t.Fatalf("creating the CSR with the join token: %v", err)
	}
	certPEM, err := csr.WaitForCertificate(wctx, c, name, uid)
	if err != nil {
		t.Fatalf("waiting for the CSR with the join token: %v", err)
	}
	nodeCfg := shared.anonymousConfig()
	nodeCfg.CertData, nodeCfg.KeyData = certPEM, keyPEM
	node := clientFor(t, nodeCfg)
	r, err := node.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username != "system:node:authz-boot" || !slices.Contains(r.Status.UserInfo.Groups, "system:nodes") {
		t.Fatalf("node certificate identity: %+v %v", r, err)
	}
	if _, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "authz-boot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bootstrapped node registering itself: %v", err)
	}
	t.Cleanup(func() {
		_ = shared.admin.CoreV1().Nodes().Delete(context.Background(), "authz-boot", metav1.DeleteOptions{})
	})
}

// Bootstrap tokens are checked against their secrets: a valid one works,
// an expired one, one not for authentication and a wrong secret are
// refused with 401.
func TestBootstrapTokens(t *testing.T) {
	ctx := context.Background()
	secrets := shared.admin.CoreV1().Secrets("kube-system")
	for _, s := range []*corev1.Secret{
		bootstrapSecret("valid1", "0123456789abcdef", time.Now().Add(time.Hour), "true"),
		bootstrapSecret("expird", "0123456789abcdef", time.Now().Add(-time.Minute), "true"),
		bootstrapSecret("noauth", "0123456789abcdef", time.Time{}, "false"),
	} {
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = secrets.Delete(context.Background(), s.Name, metav1.DeleteOptions{}) })
	}
	u, err := whoami(t, "valid1.0123456789abcdef")
	if err != nil || u.Username != "system:bootstrap:valid1" {
		t.Fatalf("valid bootstrap token: %+v %v", u, err)
	}
	for _, tok := range []string{"expird.0123456789abcdef", "noauth.0123456789abcdef", "valid1.0123456789abcdee", "absent.0123456789abcdef"} {
		if _, err := whoami(t, tok); !apierrors.IsUnauthorized(err) {
			t.Errorf("token %s: %v, want 401", tok, err)
		}
	}
	// Deleting the secret revokes the token.
	if err := secrets.Delete(ctx, "bootstrap-token-valid1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(t, "valid1.0123456789abcdef"); !apierrors.IsUnauthorized(err) {
		t.Fatalf("token of a deleted secret: %v, want 401", err)
	}
}

// Without --anonymous-auth, a request with no credential gets 401; a bad
// token gets 401 too.
func TestAnonymousRefused(t *testing.T) {
	c := clientFor(t, shared.anonymousConfig())
	if _, err := c.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("anonymous list: %v, want 401", err)
	}
	if _, err := c.Discovery().ServerVersion(); !apierrors.IsUnauthorized(err) {
		t.Fatalf("anonymous /version: %v, want 401", err)
	}
	bad := clientFor(t, shared.tokenConfig("not-a-token"))
	if _, err := bad.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("bad token: %v, want 401", err)
	}
	// Health endpoints stay open.
	hc, err := rest.HTTPClientFor(shared.anonymousConfig())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get("https://" + shared.Addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz without credentials: %d", resp.StatusCode)
	}
}

// With --anonymous-auth, requests without credentials are system:anonymous
// and RBAC decides: the public info is readable, nothing else; a bad token
// is still refused.
func TestAnonymousAllowed(t *testing.T) {
	s := startServer(t, "--anonymous-auth")
	c := clientFor(t, s.anonymousConfig())
	if v, err := c.Discovery().ServerVersion(); err != nil || !strings.HasPrefix(v.GitVersion, "v1.") {
		t.Fatalf("anonymous /version: %v %v", v, err)
	}
	_, err := c.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	want := `namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("anonymous list namespaces: %v\nwant 403 %q", err, want)
	}
	bad := clientFor(t, s.tokenConfig("not-a-token"))
	if _, err := bad.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("bad token with anonymous allowed: %v, want 401", err)
	}
}
