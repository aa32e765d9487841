package authz

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// getPath GETs path from s with cfg's credential: status and body.
func getPath(t *testing.T, s *server, cfg *rest.Config, path string) (int, string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get("https://" + s.Addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// berth server serves /debug/pprof by default (kube-apiserver's
// --profiling), to system:masters and to whoever RBAC grants the path:
// anonymous callers get 401, other users 403; --profiling=false turns it
// off.
func TestProfilingNeedsAuthorization(t *testing.T) {
	admin := shared.certConfig(t, "authz-profiling-admin", "system:masters")
	if code, body := getPath(t, shared, admin, "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("system:masters GET /debug/pprof/goroutine: %d %.300s", code, body)
	}
	if code, body := getPath(t, shared, shared.anonymousConfig(), "/debug/pprof/heap"); code != http.StatusUnauthorized {
		t.Fatalf("anonymous GET /debug/pprof/heap: %d %.300s, want 401", code, body)
	}
	if code, body := getPath(t, shared, shared.tokenConfig(aliceToken), "/debug/pprof/heap"); code != http.StatusForbidden || !strings.Contains(body, `User \"alice\" cannot get path \"/debug/pprof/heap\"`) {
		t.Fatalf("alice GET /debug/pprof/heap: %d %.300s, want 403", code, body)
	}

	// An RBAC rule on the non-resource URL grants it.
	ctx := context.Background()
	const user = "authz-profiler"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-profiler"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/debug/pprof", "/debug/pprof/*"}}}}
	if _, err := shared.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.admin.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-profiler"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := shared.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	profiler := shared.certConfig(t, user)
	// The binding reaches the authorizer's cache shortly.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := getPath(t, shared, profiler, "/debug/pprof/")
		if code == http.StatusOK && strings.Contains(body, "goroutine") {
			break
		}
		if code != http.StatusForbidden || time.Now().After(deadline) {
			t.Fatalf("%s (granted /debug/pprof/*) GET /debug/pprof/: %d %.300s", user, code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The rule grants only the profiles.
	if code, body := getPath(t, shared, profiler, "/metrics"); code != http.StatusForbidden {
		t.Fatalf("%s GET /metrics: %d %.300s, want 403", user, code, body)
	}

	off := startServer(t, "--profiling=false")
	if code, body := getPath(t, off, off.certConfig(t, "authz-profiling-admin", "system:masters"), "/debug/pprof/"); code != http.StatusNotFound {
		t.Fatalf("--profiling=false: system:masters GET /debug/pprof/: %d %.300s, want 404", code, body)
	}
}
