package authz

import (
	"context"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TokenReview runs the authenticator chain on spec.token: static and
// bootstrap tokens authenticate, unknown ones do not, and a token meant
// for the apiserver is refused for another audience.
func TestTokenReview(t *testing.T) {
	ctx := context.Background()
	reviews := shared.admin.AuthenticationV1().TokenReviews()
	review := func(token string, audiences ...string) *authenticationv1.TokenReview {
		t.Helper()
		r, err := reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenReview: %v", err)
		}
		return r
	}
	r := review(aliceToken)
	if !r.Status.Authenticated || r.Status.User.Username != "alice" || r.Status.User.UID != "uid-alice" ||
		!slices.Contains(r.Status.User.Groups, "system:authenticated") || len(r.Status.Audiences) == 0 {
		t.Fatalf("static token review: %+v", r.Status)
	}
	r = review(carolToken, r.Status.Audiences...)
	if !r.Status.Authenticated || r.Status.User.Username != "carol" || !slices.Contains(r.Status.User.Groups, "auditors") {
		t.Fatalf("static token review with the API audience: %+v", r.Status)
	}
	if r := review(aliceToken, "https://vault.example.com"); r.Status.Authenticated {
		t.Fatalf("static token accepted for another audience: %+v", r.Status)
	}
	if r := review("not-a-token"); r.Status.Authenticated || r.Status.User.Username != "" {
		t.Fatalf("unknown token review: %+v", r.Status)
	}
	if _, err := reviews.Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("TokenReview without a token: %v, want 400", err)
	}
	// Only those allowed to create tokenreviews may ask.
	alice := clientFor(t, shared.tokenConfig(aliceToken))
	_, err := alice.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: carolToken}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("alice creating a TokenReview: %v, want 403", err)
	}
}

// SubjectAccessReview and LocalSubjectAccessReview answer for the user in
// the spec; SelfSubjectAccessReview for the caller.
func TestSubjectAccessReviews(t *testing.T) {
	ctx := context.Background()
	ns := shared.newNamespace(t, "sar")
	bindView(t, shared, ns, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"})
	waitAllowed(t, clientFor(t, shared.tokenConfig(aliceToken)), ns)

	sar := func(spec authorizationv1.SubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		r, err := shared.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview %+v: %v", spec, err)
		}
		return r.Status
	}
	st := sar(authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "pods"}})
	if !st.Allowed || st.Denied || !strings.Contains(st.Reason, "view") {
		t.Fatalf("alice list pods: %+v, want allowed by the view binding", st)
	}
	if st := sar(authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}}); st.Allowed {
		t.Fatalf("alice create pods: %+v, want not allowed", st)
	}
	if st := sar(authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "list", Resource: "pods"}}); st.Allowed {
		t.Fatalf("alice list pods in kube-system: %+v, want not allowed", st)
	}
	if st := sar(authorizationv1.SubjectAccessReviewSpec{User: "someone", Groups: []string{"system:masters"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Resource: "nodes"}}); !st.Allowed {
		t.Fatalf("system:masters delete nodes: %+v, want allowed", st)
	}
	if st := sar(authorizationv1.SubjectAccessReviewSpec{User: "x", Groups: []string{"system:unauthenticated"}, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/version", Verb: "get"}}); !st.Allowed {
		t.Fatalf("unauthenticated get /version: %+v, want allowed", st)
	}
	if st := sar(authorizationv1.SubjectAccessReviewSpec{User: "alice", Groups: []string{"system:authenticated"}, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}); st.Allowed {
		t.Fatalf("alice get /metrics: %+v, want not allowed", st)
	}
	_, err := shared.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "at least one of user or group must be specified") {
		t.Fatalf("SubjectAccessReview without a subject: %v, want 422", err)
	}
	_, err = shared.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "exactly one of nonResourceAttributes or resourceAttributes must be specified") {
		t.Fatalf("SubjectAccessReview without attributes: %v, want 422", err)
	}

	lsar, err := shared.admin.AuthorizationV1().LocalSubjectAccessReviews(ns).Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec:       authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "configmaps"}}},
		metav1.CreateOptions{})
	if err != nil || !lsar.Status.Allowed {
		t.Fatalf("LocalSubjectAccessReview: %+v %v", lsar, err)
	}
	_, err = shared.admin.AuthorizationV1().LocalSubjectAccessReviews(ns).Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "configmaps"}}},
		metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must match metadata.namespace") {
		t.Fatalf("LocalSubjectAccessReview for another namespace: %v, want 422", err)
	}

	alice := clientFor(t, shared.tokenConfig(aliceToken))
	ssar := func(verb, namespace string) bool {
		t.Helper()
		r, err := alice.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: "pods"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectAccessReview: %v", err)
		}
		return r.Status.Allowed
	}
	if !ssar("watch", ns) || ssar("delete", ns) || ssar("get", "kube-system") {
		t.Fatal("SelfSubjectAccessReview answers do not match alice's view binding")
	}
	// alice may not ask about others.
	_, err = alice.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "bob", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("alice creating a SubjectAccessReview: %v, want 403", err)
	}

	rules, err := alice.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rules.Status.ResourceRules {
		if slices.Contains(r.Resources, "pods") && slices.Contains(r.Verbs, "list") && !slices.Contains(r.Verbs, "create") {
			found = true
		}
	}
	if !found {
		t.Fatalf("SelfSubjectRulesReview in %s lacks list pods: %+v", ns, rules.Status)
	}
}

// The review resources are in discovery, create only.
func TestReviewDiscovery(t *testing.T) {
	for gv, names := range map[string][]string{
		"authentication.k8s.io/v1": {"tokenreviews", "selfsubjectreviews"},
		"authorization.k8s.io/v1":  {"subjectaccessreviews", "localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews"},
	} {
		list, err := shared.admin.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("%s: %v", gv, err)
		}
		for _, name := range names {
			i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == name })
			if i < 0 || !slices.Equal(list.APIResources[i].Verbs, metav1.Verbs{"create"}) {
				t.Errorf("%s %s: %+v", gv, name, list.APIResources)
			}
		}
	}
}
