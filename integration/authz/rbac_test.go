package authz

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/integration/harness"
)

// bindView binds the view ClusterRole to subject in ns.
func bindView(t *testing.T, s *server, ns string, subject rbacv1.Subject) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "view-" + strings.ToLower(subject.Name)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := s.admin.RbacV1().RoleBindings(ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAllowed polls until the client may list pods in ns: the
// authorizer's informers see new bindings shortly after they are written.
func waitAllowed(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	harness.WaitFor(t, 30*time.Second, "the binding to take effect", func() (bool, string) {
		_, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil, ""
	})
}

// A user bound to view in one namespace can list there but not create, and
// nothing in kube-system: a static-token user bound by name, and a
// client-certificate user bound through its group.
func TestViewInOneNamespace(t *testing.T) {
	ctx := context.Background()
	ns := shared.newNamespace(t, "view")
	bindView(t, shared, ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"})
	bindView(t, shared, ns, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "viewers"})
	users := map[string]kubernetes.Interface{
		"alice": clientFor(t, shared.tokenConfig(aliceToken)),
		"bob":   clientFor(t, shared.certConfig(t, "bob", "viewers")),
	}
	for name, c := range users {
		t.Run(name, func(t *testing.T) {
			waitAllowed(t, c, ns)
			if _, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("list configmaps in %s: %v", ns, err)
			}
			_, err := c.CoreV1().Pods(ns).Create(ctx, pod("p", ""), metav1.CreateOptions{})
			want := `pods is forbidden: User "` + name + `" cannot create resource "pods" in API group "" in the namespace "` + ns + `"`
			if !apierrors.IsForbidden(err) || err.Error() != want {
				t.Fatalf("create pod: %v\nwant 403 %q", err, want)
			}
			// view does not include secrets.
			if _, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("list secrets in %s: %v, want 403", ns, err)
			}
			_, err = c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
			want = `pods is forbidden: User "` + name + `" cannot list resource "pods" in API group "" in the namespace "kube-system"`
			if !apierrors.IsForbidden(err) || err.Error() != want {
				t.Fatalf("list pods in kube-system: %v\nwant 403 %q", err, want)
			}
			if _, err := c.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("create configmap in kube-system: %v, want 403", err)
			}
			if _, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("list nodes: %v, want 403", err)
			}
			// Discovery stays open to every authenticated user.
			if _, err := c.Discovery().ServerGroups(); err != nil {
				t.Fatalf("discovery: %v", err)
			}
		})
	}
}

// kubectl auth can-i and auth whoami answer as the authorizer decides,
// for the user presenting the credential.
func TestKubectlAuth(t *testing.T) {
	harness.RequireKubectl(t)
	ns := shared.newNamespace(t, "can-i")
	bindView(t, shared, ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"})
	waitAllowed(t, clientFor(t, shared.tokenConfig(aliceToken)), ns)

	dir := t.TempDir()
	certPEM, keyPEM := shared.issueClientCert(t, "dave", "ops")
	certFile, keyFile := filepath.Join(dir, "dave.crt"), filepath.Join(dir, "dave.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	alice := []string{"--token", aliceToken}
	dave := []string{"--client-certificate", certFile, "--client-key", keyFile}

	cases := []struct {
		creds []string
		args  []string
		want  string
	}{
		{alice, []string{"list", "pods", "-n", ns}, "yes"},
		{alice, []string{"get", "deployments.apps", "-n", ns}, "yes"},
		{alice, []string{"create", "pods", "-n", ns}, "no"},
		{alice, []string{"delete", "configmaps", "-n", ns}, "no"},
		{alice, []string{"get", "secrets", "-n", ns}, "no"},
		{alice, []string{"list", "pods", "-n", "kube-system"}, "no"},
		{alice, []string{"create", "selfsubjectaccessreviews.authorization.k8s.io"}, "yes"},
		{dave, []string{"list", "pods", "-n", ns}, "no"},
		{dave, []string{"get", "/version"}, "yes"},
	}
	for _, c := range cases {
		out, errOut, err := shared.kubectl(t, c.creds, append([]string{"auth", "can-i"}, c.args...)...)
		if got := firstLine(out); got != c.want {
			t.Errorf("kubectl auth can-i %v as %v: %q (stderr %s, %v), want %q", c.args, c.creds[0], got, errOut, err, c.want)
		}
		// can-i exits 1 for "no".
		var exit *exec.ExitError
		if c.want == "no" && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
			t.Errorf("kubectl auth can-i %v: exit %v, want 1", c.args, err)
		}
	}

	// The admin asks on alice's behalf (impersonation: --as).
	admin := []string{"--client-certificate", filepath.Join(shared.Dir, "admin.crt"), "--client-key", filepath.Join(shared.Dir, "admin.key")}
	for verb, want := range map[string]string{"list": "yes", "create": "no"} {
		out, errOut, err := shared.kubectl(t, admin, "auth", "can-i", verb, "pods", "-n", ns, "--as", "alice")
		if got := firstLine(out); got != want {
			t.Errorf("kubectl auth can-i %s pods --as alice: %q (stderr %s, %v), want %q", verb, got, errOut, err, want)
		}
	}
	asBob := shared.tokenConfig(aliceToken)
	asBob.Impersonate.UserName = "bob"
	_, err := clientFor(t, asBob).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if want := `users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("alice impersonating bob: %v, want 403 %q", err, want)
	}

	out, errOut, err := shared.kubectl(t, alice, "auth", "can-i", "--list", "-n", ns)
	if err != nil {
		t.Fatalf("can-i --list: %v\n%s", err, errOut)
	}
	if !hasRuleLine(out, "pods ", "[get list watch]") || !hasRuleLine(out, "selfsubjectaccessreviews.authorization.k8s.io", "[create]") {
		t.Fatalf("can-i --list in %s lacks pods [get list watch] or selfsubjectaccessreviews [create]:\n%s", ns, out)
	}
	if hasRuleLine(out, "secrets ", "") {
		t.Fatalf("can-i --list shows secrets for a viewer:\n%s", out)
	}
	out, _, err = shared.kubectl(t, alice, "auth", "can-i", "--list", "-n", "kube-system")
	if err != nil || hasRuleLine(out, "pods ", "") {
		t.Fatalf("can-i --list in kube-system (%v) shows pods:\n%s", err, out)
	}

	out, errOut, err = shared.kubectl(t, alice, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.uid} {.status.userInfo.groups}")
	if err != nil || out != `alice uid-alice ["system:authenticated"]` {
		t.Fatalf("whoami as alice: %q %s %v", out, errOut, err)
	}
	out, errOut, err = shared.kubectl(t, dave, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	if err != nil || out != `dave ["ops","system:authenticated"]` {
		t.Fatalf("whoami as dave: %q %s %v", out, errOut, err)
	}
	out, errOut, err = shared.kubectl(t, []string{"--token", carolToken}, "auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}")
	if err != nil || out != `["auditors","system:monitoring","system:authenticated"]` {
		t.Fatalf("whoami as carol: %q %s %v", out, errOut, err)
	}
}

// hasRuleLine reports whether a `kubectl auth can-i --list` table has a
// row starting with resource and, when verbs is set, ending with verbs.
func hasRuleLine(table, resource, verbs string) bool {
	for _, line := range strings.Split(table, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, resource) && (verbs == "" || strings.HasSuffix(line, verbs)) {
			return true
		}
	}
	return false
}

// A group from the static token file gets its ClusterRoleBinding's
// permissions (system:monitoring may read /metrics); others may not.
func TestStaticTokenGroups(t *testing.T) {
	get := func(token string) (int, string) {
		t.Helper()
		hc, err := rest.HTTPClientFor(shared.tokenConfig(token))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get("https://" + shared.Addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(carolToken); code != http.StatusOK || !strings.Contains(body, "apiserver_request_total") {
		t.Fatalf("carol (system:monitoring) GET /metrics: %d %.300s", code, body)
	}
	if code, body := get(aliceToken); code != http.StatusForbidden || !strings.Contains(body, `User \"alice\" cannot get path \"/metrics\"`) {
		t.Fatalf("alice GET /metrics: %d %.300s, want 403", code, body)
	}
}
