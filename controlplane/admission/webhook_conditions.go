package admission

import (
	"context"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// maxCompiledConditions bounds the cache of compiled matchConditions;
// past it the cache starts over (configurations changed a lot).
const maxCompiledConditions = 512

// conditionMatchers evaluates webhooks' matchConditions (CEL expressions
// over object, oldObject, request and namespaceObject) with
// k8s.io/apiserver's compiler and matcher, compiling each webhook's
// conditions once. The authorizer variable is not bound: an expression
// using it fails to evaluate.
type conditionMatchers struct {
	mu       sync.Mutex
	compiler cel.ConditionCompiler
	compiled map[string]matchconditions.Matcher
}

// matches reports whether every condition of w holds for a. As upstream:
// a condition evaluating to false skips the webhook; an evaluation error
// skips it under failurePolicy Ignore and refuses the request (403) under Fail.
func (c *conditionMatchers) matches(ctx context.Context, w *webhookSpec, a admission.Attributes, phase string) (bool, error) {
	if len(w.matchConditions) == 0 {
		return true, nil
	}
	attrs := &admission.VersionedAttributes{Attributes: a, VersionedKind: a.GetKind(),
		VersionedObject: admission.NewLazyObject(a.GetObject()), VersionedOldObject: admission.NewLazyObject(a.GetOldObject())}
	res := c.matcher(w, phase).Match(ctx, attrs, nil, nil)
	if res.Error != nil {
		return false, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: res.Error.Error()}}
	}
	return res.Matches, nil
}

// matcher returns w's compiled conditions, compiling them on first use.
func (c *conditionMatchers) matcher(w *webhookSpec, phase string) matchconditions.Matcher {
	var key strings.Builder
	for _, s := range []string{phase, w.config, w.name, string(w.failurePolicy)} {
		key.WriteString(s)
		key.WriteByte(0)
	}
	for _, mc := range w.matchConditions {
		key.WriteString(mc.Name)
		key.WriteByte(0)
		key.WriteString(mc.Expression)
		key.WriteByte(0)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.compiled[key.String()]; ok {
		return m
	}
	if c.compiler == nil {
		c.compiler = cel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	}
	if c.compiled == nil || len(c.compiled) >= maxCompiledConditions {
		c.compiled = map[string]matchconditions.Matcher{}
	}
	exprs := make([]cel.ExpressionAccessor, len(w.matchConditions))
	for i, mc := range w.matchConditions {
		exprs[i] = &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression}
	}
	policy := w.failurePolicy
	m := matchconditions.NewMatcher(c.compiler.CompileCondition(exprs, cel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.StoredExpressions),
		&policy, "webhook", phase, w.name)
	c.compiled[key.String()] = m
	return m
}
