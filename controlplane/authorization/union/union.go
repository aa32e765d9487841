// Package union chains authorizers as the apiserver does: members of a
// privileged group (system:masters) are always allowed, then each authorizer
// is asked in order and the first Allow or Deny is the answer; when all have
// no opinion, so does the union.
package union

import (
	"context"
	"fmt"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"berth/internal/errdefs"
)

// Config lists the authorizers to chain.
type Config struct {
	// PrivilegedGroups are always allowed; nil means {"system:masters"}.
	PrivilegedGroups []string
	// Authorizers are asked in order, e.g. the Node authorizer, then RBAC.
	// Those that also implement authorizer.RuleResolver contribute to RulesFor.
	Authorizers []authorizer.Authorizer
}

// Authorizer is the union. It implements authorizer.Authorizer and
// authorizer.RuleResolver.
type Authorizer struct {
	privileged  []string
	authorizers []authorizer.Authorizer
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// New validates cfg and returns the union.
func New(cfg Config) (*Authorizer, error) {
	for i, a := range cfg.Authorizers {
		if a == nil {
			return nil, fmt.Errorf("union: Config.Authorizers[%d] is nil: %w", i, errdefs.ErrInvalidArgument)
		}
	}
	priv := cfg.PrivilegedGroups
	if priv == nil {
		priv = []string{user.SystemPrivilegedGroup}
	}
	return &Authorizer{privileged: priv, authorizers: cfg.Authorizers}, nil
}

func (u *Authorizer) isPrivileged(info user.Info) bool {
	if info == nil {
		return false
	}
	for _, g := range info.GetGroups() {
		for _, p := range u.privileged {
			if g == p {
				return true
			}
		}
	}
	return false
}

// Authorize returns the first decisive answer. Errors of authorizers that had
// no opinion are returned (aggregated) only if nobody decided.
func (u *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if u.isPrivileged(attrs.GetUser()) {
		return authorizer.DecisionAllow, "", nil
	}
	var reasons []string
	var errs []error
	for _, a := range u.authorizers {
		d, reason, err := a.Authorize(ctx, attrs)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		switch d {
		case authorizer.DecisionAllow, authorizer.DecisionDeny:
			return d, reason, err
		}
	}
	return authorizer.DecisionNoOpinion, strings.Join(reasons, "\n"), utilerrors.NewAggregate(errs)
}

// ConditionsAwareAuthorize is Authorize for conditions-aware callers.
func (u *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(u.Authorize(ctx, attrs))
}

// EvaluateConditions fails closed: the union makes no conditional decisions.
func (u *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor merges the rules of every member that is a RuleResolver; a
// privileged user gets everything.
func (u *Authorizer) RulesFor(ctx context.Context, info user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if u.isPrivileged(info) {
		return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{
				Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{
				Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			false, nil
	}
	var res []authorizer.ResourceRuleInfo
	var nonRes []authorizer.NonResourceRuleInfo
	incomplete := false
	var errs []error
	for _, a := range u.authorizers {
		rr, ok := a.(authorizer.RuleResolver)
		if !ok {
			incomplete = true
			continue
		}
		r, n, inc, err := rr.RulesFor(ctx, info, namespace)
		res = append(res, r...)
		nonRes = append(nonRes, n...)
		incomplete = incomplete || inc
		if err != nil {
			errs = append(errs, err)
		}
	}
	return res, nonRes, incomplete, utilerrors.NewAggregate(errs)
}
