package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestForbiddenMessageAsUpstream(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	cases := []struct {
		attrs  authorizer.AttributesRecord
		reason string
		want   string
	}{
		{authorizer.AttributesRecord{User: alice, Verb: "create", Resource: "pods", Namespace: "kube-system", ResourceRequest: true}, "",
			`pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "kube-system"`},
		{authorizer.AttributesRecord{User: alice, Verb: "get", APIGroup: "apps", Resource: "deployments", Name: "web", Namespace: "dev", ResourceRequest: true}, "",
			`deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments" in API group "apps" in the namespace "dev"`},
		{authorizer.AttributesRecord{User: alice, Verb: "list", Resource: "nodes", ResourceRequest: true}, "",
			`nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope`},
		{authorizer.AttributesRecord{User: alice, Verb: "update", Resource: "pods", Subresource: "status", Name: "p", Namespace: "d", ResourceRequest: true}, "no relationship",
			`pods "p" is forbidden: User "alice" cannot update resource "pods/status" in API group "" in the namespace "d": no relationship`},
		{authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/metrics"}, "",
			`forbidden: User "alice" cannot get path "/metrics"`},
	}
	for _, c := range cases {
		err := Forbidden(c.attrs, c.reason)
		if !apierrors.IsForbidden(err) || err.Error() != c.want {
			t.Errorf("got %q (forbidden %v), want %q", err.Error(), apierrors.IsForbidden(err), c.want)
		}
	}
}

type decideFunc func(authorizer.Attributes) (authorizer.Decision, string, error)

func (f decideFunc) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return f(a)
}

func (f decideFunc) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(f.Authorize(ctx, a))
}

func (f decideFunc) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

func TestAuthorizeBuildsAttributesAndRefuses(t *testing.T) {
	var seen authorizer.Attributes
	h := &Handler{log: slog.New(slog.DiscardHandler), cfg: Config{Authorizer: decideFunc(func(a authorizer.Attributes) (authorizer.Decision, string, error) {
		seen = a
		if a.GetVerb() == "list" {
			return authorizer.DecisionAllow, "", nil
		}
		if a.GetVerb() == "delete" {
			return authorizer.DecisionNoOpinion, "", errors.New("rbac store down")
		}
		return authorizer.DecisionNoOpinion, "", nil
	})}}
	infos := &genericapirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	do := func(method, target string) error {
		r := httptest.NewRequest(method, target, nil)
		info, err := infos.NewRequestInfo(r)
		if err != nil {
			t.Fatal(err)
		}
		ctx := genericapirequest.WithRequestInfo(r.Context(), info)
		ctx = genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:nodes"}})
		return h.authorize(r.WithContext(ctx))
	}
	if err := do(http.MethodGet, "/api/v1/namespaces/d/pods?fieldSelector=spec.nodeName%3Dn1"); err != nil {
		t.Fatalf("allowed list refused: %v", err)
	}
	reqs, _ := seen.GetFieldSelector()
	if seen.GetNamespace() != "d" || seen.GetResource() != "pods" || len(reqs) != 1 || reqs[0].Field != "spec.nodeName" || reqs[0].Value != "n1" {
		t.Fatalf("attributes %+v, field selector %v", seen, reqs)
	}
	err := do(http.MethodPost, "/api/v1/namespaces/kube-system/pods")
	if !apierrors.IsForbidden(err) || err.Error() != `pods is forbidden: User "system:node:n1" cannot create resource "pods" in API group "" in the namespace "kube-system"` {
		t.Fatalf("create: %v", err)
	}
	if err := do(http.MethodDelete, "/api/v1/namespaces/d/pods/p"); !apierrors.IsInternalError(err) {
		t.Fatalf("authorizer error: %v, want 500", err)
	}
}
