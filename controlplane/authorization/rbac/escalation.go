package rbac

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// ConfirmNoEscalation refuses, with 403 Forbidden, a user creating or
// updating a (Cluster)Role or binding that grants rules the user does not
// hold itself in namespace ("" for cluster-wide), as upstream's RBAC
// storage does. resolver is normally the union authorizer, so
// system:masters holds everything.
func ConfirmNoEscalation(ctx context.Context, resolver authorizer.RuleResolver, u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	res, nonRes, _, resolveErr := resolver.RulesFor(ctx, u, namespace)
	var owned []rbacv1.PolicyRule
	for _, r := range res {
		owned = append(owned, rbacv1.PolicyRule{Verbs: r.GetVerbs(), APIGroups: r.GetAPIGroups(), Resources: r.GetResources(), ResourceNames: r.GetResourceNames()})
	}
	for _, r := range nonRes {
		owned = append(owned, rbacv1.PolicyRule{Verbs: r.GetVerbs(), NonResourceURLs: r.GetNonResourceURLs()})
	}
	covers, missing := validation.Covers(owned, rules)
	if covers {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "user %q (groups=%q) is attempting to grant RBAC permissions not currently held:", u.GetName(), u.GetGroups())
	for _, r := range missing {
		b.WriteString("\n" + describeRule(r))
	}
	if resolveErr != nil {
		fmt.Fprintf(&b, "; resolution errors: %v", resolveErr)
	}
	return apierrors.NewForbidden(rbacv1.Resource("roles"), "", fmt.Errorf("%s", b.String()))
}

func describeRule(r rbacv1.PolicyRule) string {
	var parts []string
	if len(r.APIGroups) > 0 {
		parts = append(parts, fmt.Sprintf("APIGroups:%q", r.APIGroups))
	}
	if len(r.Resources) > 0 {
		parts = append(parts, fmt.Sprintf("Resources:%q", r.Resources))
	}
	if len(r.ResourceNames) > 0 {
		parts = append(parts, fmt.Sprintf("ResourceNames:%q", r.ResourceNames))
	}
	if len(r.NonResourceURLs) > 0 {
		parts = append(parts, fmt.Sprintf("NonResourceURLs:%q", r.NonResourceURLs))
	}
	parts = append(parts, fmt.Sprintf("Verbs:%q", r.Verbs))
	return "{" + strings.Join(parts, ", ") + "}"
}
