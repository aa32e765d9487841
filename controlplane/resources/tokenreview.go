package resources

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"

	"berth/controlplane/apiserver"
)

// tokenReviews serves authentication.k8s.io/v1 TokenReview: spec.token is
// run through the bearer-token authenticators, for spec.audiences (or the
// apiserver's own audiences when empty); status says who it is.
func tokenReviews(tokens authenticator.Token, apiAudiences []string) *apiserver.Resource {
	return createOnly(authenticationv1.SchemeGroupVersion, "tokenreviews", "TokenReview", false,
		func() runtime.Object { return &authenticationv1.TokenReview{} },
		func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review, ok := obj.(*authenticationv1.TokenReview)
			if !ok {
				return nil, badType(obj)
			}
			return reviewToken(ctx, tokens, apiAudiences, review)
		})
}

// reviewToken fills review.Status.
func reviewToken(ctx context.Context, tokens authenticator.Token, apiAudiences []string, review *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	if review.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	auds := authenticator.Audiences(review.Spec.Audiences)
	if len(auds) == 0 {
		auds = apiAudiences
	}
	if len(auds) > 0 {
		ctx = authenticator.WithAudiences(ctx, auds)
	}
	out := review.DeepCopy()
	resp, ok, err := tokens.AuthenticateToken(ctx, review.Spec.Token)
	if err != nil {
		out.Status.Error = err.Error()
	}
	if !ok || resp == nil || resp.User == nil {
		return out, nil
	}
	if len(auds) > 0 && len(resp.Audiences) > 0 && len(auds.Intersect(resp.Audiences)) == 0 {
		out.Status.Error = "token audiences do not match the requested audiences"
		return out, nil
	}
	u := resp.User
	out.Status.Authenticated = true
	out.Status.User = authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	if extra := u.GetExtra(); len(extra) > 0 {
		out.Status.User.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range extra {
			out.Status.User.Extra[k] = v
		}
	}
	out.Status.Audiences = resp.Audiences
	return out, nil
}
