package resources

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/apiserver"
)

// selfSubjectReviewREST answers authentication.k8s.io/v1
// SelfSubjectReview creates (kubectl auth whoami) with the caller's
// identity as the apiserver authenticated it. Nothing is stored: only
// Create is served (apiserver.Resource.Verbs), so the embedded
// rest.StandardStorage stays nil and is never called.
type selfSubjectReviewREST struct {
	rest.StandardStorage
}

// New returns an empty SelfSubjectReview.
func (selfSubjectReviewREST) New() runtime.Object { return &authenticationv1.SelfSubjectReview{} }

// Destroy has nothing to release.
func (selfSubjectReviewREST) Destroy() {}

// NamespaceScoped is false: reviews are cluster-scoped.
func (selfSubjectReviewREST) NamespaceScoped() bool { return false }

// Create returns the review with status.userInfo set to the caller.
func (selfSubjectReviewREST) Create(ctx context.Context, _ runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user in the request")
	}
	info := authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	if extra := u.GetExtra(); len(extra) > 0 {
		info.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range extra {
			info.Extra[k] = v
		}
	}
	return &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: info},
	}, nil
}

// selfSubjectReviews is the selfsubjectreviews resource.
func selfSubjectReviews() *apiserver.Resource {
	return &apiserver.Resource{
		GroupVersion: authenticationv1.SchemeGroupVersion, Resource: "selfsubjectreviews", Kind: "SelfSubjectReview",
		SingularName: "selfsubjectreview", Store: selfSubjectReviewREST{}, Subresources: map[string]apiserver.Subresource{},
		Verbs: []string{"create"},
	}
}
