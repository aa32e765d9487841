package authz

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// At every start the default policy is reconciled: a default role that
// lost a rule gets it back (keeping the admin's additions), one annotated
// autoupdate=false is left as the admin made it, and a deleted default
// binding is recreated.
func TestDefaultPolicyReconciledAtStart(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "server")
	s, err := launchServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	roles := s.admin.RbacV1().ClusterRoles()
	custom := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}

	basic, err := roles.Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	basic.Rules = []rbacv1.PolicyRule{custom}
	if _, err := roles.Update(ctx, basic, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	discovery, err := roles.Get(ctx, "system:discovery", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	discovery.Annotations["rbac.authorization.kubernetes.io/autoupdate"] = "false"
	discovery.Rules = []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}}
	if _, err := roles.Update(ctx, discovery, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.admin.RbacV1().ClusterRoleBindings().Delete(ctx, "system:basic-user", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Stop()

	s, err = launchServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("--- berth server log ---\n%s", s.Log())
		}
	})
	roles = s.admin.RbacV1().ClusterRoles()
	basic, err = roles.Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hasReview := slices.ContainsFunc(basic.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "selfsubjectaccessreviews")
	})
	if !slices.ContainsFunc(basic.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.APIGroups, "example.com") }) || !hasReview {
		t.Fatalf("system:basic-user after restart: %+v, want the admin's rule and the defaults", basic.Rules)
	}
	discovery, err = roles.Get(ctx, "system:discovery", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(discovery.Rules) != 1 || !slices.Equal(discovery.Rules[0].NonResourceURLs, []string{"/version"}) {
		t.Fatalf("autoupdate=false role changed at restart: %+v", discovery.Rules)
	}
	b, err := s.admin.RbacV1().ClusterRoleBindings().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil || len(b.Subjects) != 1 || b.Subjects[0].Name != "system:authenticated" {
		t.Fatalf("deleted default binding after restart: %+v %v", b, err)
	}
}
