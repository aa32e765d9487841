package authz

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
)

// A namespace admin may create roles and bindings within what she holds,
// and is refused granting more: RBAC objects cannot escalate privileges.
func TestNoPrivilegeEscalation(t *testing.T) {
	ctx := context.Background()
	ns := shared.newNamespace(t, "escalate")
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}
	if _, err := shared.admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := clientFor(t, shared.tokenConfig(aliceToken))
	waitAllowed(t, alice, ns)
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}}

	held := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	if _, err := alice.RbacV1().Roles(ns).Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatalf("role within alice's rights: %v", err)
	}
	if _, err := alice.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "m-view"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: subject}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding view (held by an admin): %v", err)
	}

	more := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "node-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}}
	_, err := alice.RbacV1().Roles(ns).Create(ctx, more, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held`) {
		t.Fatalf("role granting more: %v, want 403", err)
	}
	held.Rules = append(held.Rules, rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
	if _, err := alice.RbacV1().Roles(ns).Update(ctx, held, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("updating a role to grant everything: %v, want 403", err)
	}
	_, err = alice.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "m-admin"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: subject}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not currently held") {
		t.Fatalf("binding cluster-admin: %v, want 403", err)
	}

	// The bind verb waives the check for the named role.
	binder := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "may-bind-cluster-admin"}, Rules: []rbacv1.PolicyRule{{
		Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"cluster-admin"}}}}
	if _, err := shared.admin.RbacV1().Roles(ns).Create(ctx, binder, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := shared.admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-binder"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: binder.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 30*time.Second, "alice to bind cluster-admin with the bind verb", func() (bool, string) {
		_, err := alice.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "m-admin"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: subject}, metav1.CreateOptions{})
		return err == nil, errString(err)
	})
}
