package resources

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"berth/controlplane/apiserver"
)

// selfSubjectRulesReviews serves SelfSubjectRulesReview (kubectl auth
// can-i --list): the caller's rules in spec.namespace.
func selfSubjectRulesReviews(rules authorizer.RuleResolver) *apiserver.Resource {
	return createOnly(authorizationv1.SchemeGroupVersion, "selfsubjectrulesreviews", "SelfSubjectRulesReview", false,
		func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} },
		func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
			if !ok {
				return nil, badType(obj)
			}
			if errs := validateEmptyMeta(review.ObjectMeta, false); len(errs) > 0 {
				return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview").GroupKind(), "", errs)
			}
			if review.Spec.Namespace == "" {
				return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview").GroupKind(), "",
					field.ErrorList{field.Required(field.NewPath("spec", "namespace"), "")})
			}
			u, ok := genericapirequest.UserFrom(ctx)
			if !ok {
				return nil, apierrors.NewBadRequest("no user in the request")
			}
			res, nonRes, incomplete, err := rules.RulesFor(ctx, u, review.Spec.Namespace)
			out := review.DeepCopy()
			out.Status = authorizationv1.SubjectRulesReviewStatus{
				ResourceRules:    []authorizationv1.ResourceRule{},
				NonResourceRules: []authorizationv1.NonResourceRule{},
				Incomplete:       incomplete,
			}
			for _, r := range res {
				out.Status.ResourceRules = append(out.Status.ResourceRules, authorizationv1.ResourceRule{
					Verbs: r.GetVerbs(), APIGroups: r.GetAPIGroups(), Resources: r.GetResources(), ResourceNames: r.GetResourceNames(),
				})
			}
			for _, r := range nonRes {
				out.Status.NonResourceRules = append(out.Status.NonResourceRules, authorizationv1.NonResourceRule{
					Verbs: r.GetVerbs(), NonResourceURLs: r.GetNonResourceURLs(),
				})
			}
			if err != nil {
				out.Status.EvaluationError = err.Error()
			}
			return out, nil
		})
}
