package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
	"berth/internal/testpki"
)

// TestAgentAPIAuthorization: the agent's API (port 10250's) authenticates
// client certificates and bearer tokens (TokenReview) and authorizes every
// request by SubjectAccessReview on nodes/NODE, as the kubelet's webhook
// modes: anonymous is 401; a node's certificate, a plain user and a service
// account without rights are 403; a service account granted nodes/proxy
// reaches /pods, /healthz and a container's log but not /logs/ (nodes/log);
// the apiserver's own client certificate (system:kubelet-api-admin, no
// longer system:masters) reaches everything, so kubectl logs and exec work.
func TestAgentAPIAuthorization(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{})
	ctx := context.Background()
	waitNodeReady(t, c, v1.ConditionTrue)

	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: authz
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo logged-line; exec sleep 3600"]
`
	c.MustKubectl(t, fmt.Sprintf(pod, c.Env.BusyboxImage), "apply", "-f", "-")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "pod", "authz", "--wait=true", "--timeout=60s") })
	waitPodRunning(t, c, "authz")

	// Through the apiserver, with its own identity towards the agent.
	if out := c.MustKubectl(t, "", "logs", "authz"); !strings.Contains(out, "logged-line") {
		t.Fatalf("kubectl logs = %q", out)
	}
	if out := c.MustKubectl(t, "", "exec", "authz", "--", "echo", "exec-through-apiserver"); strings.TrimSpace(out) != "exec-through-apiserver" {
		t.Fatalf("kubectl exec = %q", out)
	}

	// Service accounts: one without rights, one granted nodes/proxy.
	cs := c.Client
	for _, sa := range []string{"no-rights", "node-proxy"} {
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-node-proxy"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "create"}, APIGroups: []string{""}, Resources: []string{"nodes/proxy"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-node-proxy"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "e2e-node-proxy"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "node-proxy", Namespace: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(ctx, "e2e-node-proxy", metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(ctx, "e2e-node-proxy", metav1.DeleteOptions{})
	})
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}

	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(c.DataDir, "ca.crt"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("cluster CA: %v", err)
	}
	clientWith := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
	}
	certOf := func(certFile, keyFile string) tls.Certificate {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}
	userCert := func(cn string, orgs ...string) tls.Certificate {
		return testpki.LoadCA(t, c.DataDir).Client(t, cn, orgs...)
	}
	base := "https://127.0.0.1:" + strconv.Itoa(c.KubeletPort)
	get := func(client *http.Client, bearer, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	logPath := "/containerLogs/default/authz/main"
	forbidden := func(user, subresources string) string {
		return fmt.Sprintf("Forbidden (user=%s, verb=get, resource=nodes, subresource(s)=[%s])", user, subresources)
	}
	anon := clientWith()
	node := clientWith(certOf(filepath.Join(c.AgentRootDir, "pki", "kubelet-client.crt"), filepath.Join(c.AgentRootDir, "pki", "kubelet-client.key")))
	apiserver := clientWith(certOf(filepath.Join(c.DataDir, "apiserver-node-client.crt"), filepath.Join(c.DataDir, "apiserver-node-client.key")))
	for _, tc := range []struct {
		name     string
		client   *http.Client
		bearer   string
		path     string
		wantCode int
		wantBody string
	}{
		{"anonymous", anon, "", "/pods", http.StatusUnauthorized, "Unauthorized"},
		{"unknown token", anon, "abcdef.0123456789abcdef", "/pods", http.StatusUnauthorized, "Unauthorized"},
		{"the node's own certificate", node, "", logPath, http.StatusForbidden, forbidden("system:node:"+c.Node, "proxy")},
		{"a plain user's certificate", clientWith(userCert("alice", "developers")), "", "/pods", http.StatusForbidden, forbidden("alice", "pods proxy")},
		{"a service account without rights", anon, token("no-rights"), logPath, http.StatusForbidden, forbidden("system:serviceaccount:default:no-rights", "proxy")},
		{"a service account with nodes/proxy: a container's log", anon, token("node-proxy"), logPath, http.StatusOK, "logged-line"},
		{"a service account with nodes/proxy: /pods", anon, token("node-proxy"), "/pods", http.StatusOK, `"name":"authz"`},
		{"a service account with nodes/proxy: /healthz", anon, token("node-proxy"), "/healthz", http.StatusOK, "ok"},
		{"a service account with nodes/proxy only: /logs/", anon, token("node-proxy"), "/logs/", http.StatusForbidden, forbidden("system:serviceaccount:default:node-proxy", "log")},
		{"the apiserver's certificate: /pods", apiserver, "", "/pods", http.StatusOK, `"name":"authz"`},
		{"the apiserver's certificate: /metrics", apiserver, "", "/metrics", http.StatusOK, "# TYPE"},
		{"the apiserver's certificate: /logs/", apiserver, "", "/logs/", http.StatusOK, ""},
	} {
		code, body := get(tc.client, tc.bearer, tc.path)
		if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
			t.Errorf("%s: GET %s = %d %.300q, want %d with %q", tc.name, tc.path, code, body, tc.wantCode, tc.wantBody)
		}
	}
}
