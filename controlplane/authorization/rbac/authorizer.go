// Package rbac is berth's RBAC authorizer: it grants a request when a
// (Cluster)RoleBinding for the user, one of its groups or its service account
// refers to a (Cluster)Role with a matching rule. Rules are read through
// client-go listers, which the apiserver feeds from its own watch.
package rbac

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"

	"berth/internal/errdefs"
)

// Config holds the listers the authorizer reads RBAC objects from.
type Config struct {
	Roles               rbaclisters.RoleLister
	RoleBindings        rbaclisters.RoleBindingLister
	ClusterRoles        rbaclisters.ClusterRoleLister
	ClusterRoleBindings rbaclisters.ClusterRoleBindingLister
}

func (c Config) validate() error {
	var missing []string
	if c.Roles == nil {
		missing = append(missing, "Roles")
	}
	if c.RoleBindings == nil {
		missing = append(missing, "RoleBindings")
	}
	if c.ClusterRoles == nil {
		missing = append(missing, "ClusterRoles")
	}
	if c.ClusterRoleBindings == nil {
		missing = append(missing, "ClusterRoleBindings")
	}
	if len(missing) > 0 {
		return fmt.Errorf("rbac: Config.%v must be set: %w", missing, errdefs.ErrInvalidArgument)
	}
	return nil
}

// Authorizer is the RBAC authorizer. It implements authorizer.Authorizer and
// authorizer.RuleResolver.
type Authorizer struct {
	cfg Config
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// New returns an RBAC authorizer reading from cfg's listers.
func New(cfg Config) (*Authorizer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Authorizer{cfg: cfg}, nil
}

// Authorize allows the request when some binding that applies to the user
// grants it; otherwise it has no opinion (RBAC never denies outright).
// Bindings that could not be resolved (a missing role) are, as upstream,
// named in the reason of a no-opinion decision, not returned as an error:
// they must not turn every refusal into a server error.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	var reason string
	errs := a.visitRules(attrs.GetUser(), attrs.GetNamespace(), func(src string, rule *rbacv1.PolicyRule) bool {
		if RuleAllows(attrs, rule) {
			reason = "RBAC: allowed by " + src
			return false
		}
		return true
	})
	if reason != "" {
		return authorizer.DecisionAllow, reason, nil
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return authorizer.DecisionNoOpinion, strings.Join(msgs, "; "), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize is Authorize for conditions-aware callers; RBAC
// decisions are never conditional.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions fails closed: RBAC produces no conditional decisions.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor lists the rules that apply to u in namespace (cluster-wide rules
// plus, when namespace is set, the namespace's), as `kubectl auth can-i
// --list` shows through SelfSubjectRulesReview. incomplete is true when some
// binding could not be resolved; err then says why.
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	var res []authorizer.ResourceRuleInfo
	var nonRes []authorizer.NonResourceRuleInfo
	errs := a.visitRules(u, namespace, func(_ string, rule *rbacv1.PolicyRule) bool {
		if len(rule.Resources) > 0 {
			res = append(res, &authorizer.DefaultResourceRuleInfo{
				Verbs:         append([]string(nil), rule.Verbs...),
				APIGroups:     append([]string(nil), rule.APIGroups...),
				Resources:     append([]string(nil), rule.Resources...),
				ResourceNames: append([]string(nil), rule.ResourceNames...),
			})
		}
		if len(rule.NonResourceURLs) > 0 {
			nonRes = append(nonRes, &authorizer.DefaultNonResourceRuleInfo{
				Verbs:           append([]string(nil), rule.Verbs...),
				NonResourceURLs: append([]string(nil), rule.NonResourceURLs...),
			})
		}
		return true
	})
	if len(errs) > 0 {
		return res, nonRes, true, utilerrors.NewAggregate(errs)
	}
	return res, nonRes, false, nil
}

// visitRules calls visit for every rule granted to u cluster-wide and, when
// namespace is not empty, in that namespace; src describes the binding, role
// and subject. visit returns false to stop. Lookup errors are collected.
func (a *Authorizer) visitRules(u user.Info, namespace string, visit func(src string, rule *rbacv1.PolicyRule) bool) []error {
	var errs []error
	if u == nil {
		return []error{fmt.Errorf("rbac: request has no user: %w", errdefs.ErrInvalidArgument)}
	}
	crbs, err := a.cfg.ClusterRoleBindings.List(labels.Everything())
	if err != nil {
		errs = append(errs, err)
	}
	for _, b := range crbs {
		i, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := a.roleRefRules(b.RoleRef, "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		src := fmt.Sprintf("ClusterRoleBinding %q of ClusterRole %q to %s", b.Name, b.RoleRef.Name, describeSubject(&b.Subjects[i], ""))
		for j := range rules {
			if !visit(src, &rules[j]) {
				return nil
			}
		}
	}
	if namespace == "" {
		return errs
	}
	rbs, err := a.cfg.RoleBindings.RoleBindings(namespace).List(labels.Everything())
	if err != nil {
		errs = append(errs, err)
	}
	for _, b := range rbs {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := a.roleRefRules(b.RoleRef, namespace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		src := fmt.Sprintf("RoleBinding %q of %s %q to %s", b.Name+"/"+namespace, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(&b.Subjects[i], namespace))
		for j := range rules {
			if !visit(src, &rules[j]) {
				return nil
			}
		}
	}
	return errs
}

// RoleRefRules returns the rules of the role a binding in namespace ("" for
// a ClusterRoleBinding) refers to; a missing role is errdefs.ErrNotFound.
func (a *Authorizer) RoleRefRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	return a.roleRefRules(ref, namespace)
}

// roleRefRules returns the rules of the role a binding refers to.
func (a *Authorizer) roleRefRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch {
	case ref.APIGroup != rbacv1.GroupName:
		return nil, fmt.Errorf("rbac: roleRef.apiGroup %q is not %q: %w", ref.APIGroup, rbacv1.GroupName, errdefs.ErrInvalidArgument)
	case ref.Kind == "ClusterRole":
		r, err := a.cfg.ClusterRoles.Get(ref.Name)
		if err != nil {
			return nil, classify(err, "clusterrole", ref.Name)
		}
		return r.Rules, nil
	case ref.Kind == "Role" && namespace != "":
		r, err := a.cfg.Roles.Roles(namespace).Get(ref.Name)
		if err != nil {
			return nil, classify(err, "role", namespace+"/"+ref.Name)
		}
		return r.Rules, nil
	default:
		return nil, fmt.Errorf("rbac: roleRef.kind %q is not allowed here: %w", ref.Kind, errdefs.ErrInvalidArgument)
	}
}

// classify wraps a lister error, marking not-found ones with errdefs.ErrNotFound.
func classify(err error, kind, name string) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("rbac: %s %q not found: %w", kind, name, errdefs.ErrNotFound)
	}
	return fmt.Errorf("rbac: %s %q: %w", kind, name, err)
}
