package resources

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"berth/controlplane/apiserver"
	"berth/controlplane/authentication"
	"berth/controlplane/authorization/union"
)

// reviews builds the review resources over a static token file (alice)
// and a union that allows system:masters only.
func reviews(t *testing.T) map[string]*apiserver.Resource {
	t.Helper()
	tokens, err := authentication.ParseTokenFile("tokens", strings.NewReader("alice-token,alice,uid-a,devs\n"))
	if err != nil {
		t.Fatal(err)
	}
	authz, err := union.New(union.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ReviewResources(ReviewConfig{Tokens: tokens, Authorizer: authz, Rules: authz})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*apiserver.Resource{}
	for _, r := range rs {
		if r.Verbs == nil || len(r.Verbs) != 1 || r.Verbs[0] != "create" {
			t.Errorf("%s verbs %v, want create only", r.Resource, r.Verbs)
		}
		out[r.Resource] = r
	}
	return out
}

func create(t *testing.T, r *apiserver.Resource, ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	t.Helper()
	return r.Store.Create(ctx, obj, nil, &metav1.CreateOptions{})
}

func TestTokenReviewUnit(t *testing.T) {
	r := reviews(t)["tokenreviews"]
	out, err := create(t, r, context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "alice-token"}})
	if err != nil {
		t.Fatal(err)
	}
	st := out.(*authenticationv1.TokenReview).Status
	if !st.Authenticated || st.User.Username != "alice" || st.User.UID != "uid-a" || len(st.User.Groups) != 1 || st.User.Groups[0] != "devs" {
		t.Fatalf("status %+v", st)
	}
	out, err = create(t, r, context.Background(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "nope"}})
	if err != nil || out.(*authenticationv1.TokenReview).Status.Authenticated {
		t.Fatalf("unknown token: %+v %v", out, err)
	}
	if _, err := create(t, r, context.Background(), &authenticationv1.TokenReview{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("no token: %v, want 400", err)
	}
}

func TestAccessReviewsUnit(t *testing.T) {
	rs := reviews(t)
	ctx := context.Background()
	masters := authorizationv1.SubjectAccessReviewSpec{User: "root", Groups: []string{"system:masters"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Resource: "nodes"}}
	out, err := create(t, rs["subjectaccessreviews"], ctx, &authorizationv1.SubjectAccessReview{Spec: masters})
	if err != nil || !out.(*authorizationv1.SubjectAccessReview).Status.Allowed {
		t.Fatalf("system:masters: %+v %v", out, err)
	}
	alice := authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "a"}}
	out, err = create(t, rs["subjectaccessreviews"], ctx, &authorizationv1.SubjectAccessReview{Spec: alice})
	if err != nil || out.(*authorizationv1.SubjectAccessReview).Status.Allowed || out.(*authorizationv1.SubjectAccessReview).Status.Denied {
		t.Fatalf("alice: %+v %v, want neither allowed nor denied", out, err)
	}

	invalid := []struct {
		res  string
		obj  runtime.Object
		want string
	}{
		{"subjectaccessreviews", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: alice.ResourceAttributes}},
			"at least one of user or group must be specified"},
		{"subjectaccessreviews", &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			ResourceAttributes: alice.ResourceAttributes, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/x", Verb: "get"}}},
			"exactly one of nonResourceAttributes or resourceAttributes must be specified"},
		{"subjectaccessreviews", &authorizationv1.SubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: alice}, "metadata: Invalid value"},
		{"localsubjectaccessreviews", &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "b"}, Spec: alice},
			"spec.resourceAttributes.namespace: Invalid value: \"a\": must match metadata.namespace"},
		{"localsubjectaccessreviews", &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "a"},
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/x", Verb: "get"}}},
			"disallowed on this kind of request"},
		{"selfsubjectrulesreviews", &authorizationv1.SelfSubjectRulesReview{}, "spec.namespace: Required value"},
	}
	self := genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "alice"})
	for _, c := range invalid {
		_, err := create(t, rs[c.res], self, c.obj)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want 422 containing %q", c.res, c.obj, err, c.want)
		}
	}

	lsar := &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "a"}, Spec: alice}
	if _, err := create(t, rs["localsubjectaccessreviews"], ctx, lsar); err != nil {
		t.Fatalf("valid local review: %v", err)
	}

	root := genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "root", Groups: []string{"system:masters"}})
	out, err = create(t, rs["selfsubjectaccessreviews"], root, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}})
	if err != nil || !out.(*authorizationv1.SelfSubjectAccessReview).Status.Allowed {
		t.Fatalf("self review as system:masters: %+v %v", out, err)
	}
	out, err = create(t, rs["selfsubjectrulesreviews"], root, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	rules := out.(*authorizationv1.SelfSubjectRulesReview).Status
	if len(rules.ResourceRules) != 1 || rules.ResourceRules[0].Verbs[0] != "*" || len(rules.NonResourceRules) != 1 {
		t.Fatalf("rules of system:masters: %+v", rules)
	}
}

func TestSetAddRefusesDuplicates(t *testing.T) {
	set := &Set{ByGVR: map[schema.GroupVersionResource]*apiserver.Resource{}}
	rs := reviews(t)
	if err := set.Add(rs["tokenreviews"]); err != nil {
		t.Fatal(err)
	}
	if err := set.Add(rs["tokenreviews"]); err == nil {
		t.Fatal("duplicate resource accepted")
	}
}
