package rbac_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"

	"berth/controlplane/authorization/rbac"
)

func TestConfirmNoEscalation(t *testing.T) {
	p := newPolicy()
	p.withBootstrap(t)
	p.add(t, roleBinding("dev", "alice-edit", "ClusterRole", "edit", userSubj("alice")))
	a := p.authorizer(t)
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	ctx := context.Background()

	held := []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	if err := rbac.ConfirmNoEscalation(ctx, a, alice, "dev", held); err != nil {
		t.Fatalf("granting held rules: %v", err)
	}
	notHeld := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}
	err := rbac.ConfirmNoEscalation(ctx, a, alice, "dev", notHeld)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `is attempting to grant RBAC permissions not currently held:`) ||
		!strings.Contains(err.Error(), `Resources:["nodes"]`) {
		t.Fatalf("escalation: %v", err)
	}
	if err := rbac.ConfirmNoEscalation(ctx, a, alice, "kube-system", held); !apierrors.IsForbidden(err) {
		t.Fatalf("rules held in dev granted in kube-system: %v", err)
	}
}
