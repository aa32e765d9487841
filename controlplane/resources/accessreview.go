package resources

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"berth/controlplane/apiserver"
)

// subjectAccessReviews serves SubjectAccessReview: may spec's user do spec's request?
func subjectAccessReviews(authz authorizer.Authorizer) *apiserver.Resource {
	return createOnly(authorizationv1.SchemeGroupVersion, "subjectaccessreviews", "SubjectAccessReview", false,
		func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
		func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review, ok := obj.(*authorizationv1.SubjectAccessReview)
			if !ok {
				return nil, badType(obj)
			}
			errs := validateAccessSpec(review.Spec, field.NewPath("spec"), true)
			errs = append(errs, validateEmptyMeta(review.ObjectMeta, false)...)
			if len(errs) > 0 {
				return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview").GroupKind(), "", errs)
			}
			out := review.DeepCopy()
			out.Status = decide(ctx, authz, specUser(review.Spec), review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
			return out, nil
		})
}

// localSubjectAccessReviews serves LocalSubjectAccessReview: a
// SubjectAccessReview about one namespace, created in that namespace.
func localSubjectAccessReviews(authz authorizer.Authorizer) *apiserver.Resource {
	return createOnly(authorizationv1.SchemeGroupVersion, "localsubjectaccessreviews", "LocalSubjectAccessReview", true,
		func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
		func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review, ok := obj.(*authorizationv1.LocalSubjectAccessReview)
			if !ok {
				return nil, badType(obj)
			}
			spec := field.NewPath("spec")
			errs := validateAccessSpec(review.Spec, spec, true)
			errs = append(errs, validateEmptyMeta(review.ObjectMeta, true)...)
			if review.Spec.NonResourceAttributes != nil {
				errs = append(errs, field.Invalid(spec.Child("nonResourceAttributes"), review.Spec.NonResourceAttributes, "disallowed on this kind of request"))
			}
			if ra := review.Spec.ResourceAttributes; ra != nil && ra.Namespace != review.Namespace {
				errs = append(errs, field.Invalid(spec.Child("resourceAttributes", "namespace"), ra.Namespace, "must match metadata.namespace"))
			}
			if len(errs) > 0 {
				return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview").GroupKind(), "", errs)
			}
			out := review.DeepCopy()
			out.Status = decide(ctx, authz, specUser(review.Spec), review.Spec.ResourceAttributes, nil)
			return out, nil
		})
}

// selfSubjectAccessReviews serves SelfSubjectAccessReview (kubectl auth
// can-i): may the caller do spec's request?
func selfSubjectAccessReviews(authz authorizer.Authorizer) *apiserver.Resource {
	return createOnly(authorizationv1.SchemeGroupVersion, "selfsubjectaccessreviews", "SelfSubjectAccessReview", false,
		func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
		func(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
			review, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
			if !ok {
				return nil, badType(obj)
			}
			spec := field.NewPath("spec")
			errs := validateEmptyMeta(review.ObjectMeta, false)
			errs = append(errs, validateAttributes(review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes, spec)...)
			if len(errs) > 0 {
				return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind(), "", errs)
			}
			u, ok := genericapirequest.UserFrom(ctx)
			if !ok {
				return nil, apierrors.NewBadRequest("no user in the request")
			}
			out := review.DeepCopy()
			out.Status = decide(ctx, authz, u, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
			return out, nil
		})
}

// validateAccessSpec checks a (Local)SubjectAccessReview's spec: one kind
// of attributes, and a user or a group.
func validateAccessSpec(s authorizationv1.SubjectAccessReviewSpec, path *field.Path, needSubject bool) field.ErrorList {
	errs := validateAttributes(s.ResourceAttributes, s.NonResourceAttributes, path)
	if needSubject && s.User == "" && len(s.Groups) == 0 {
		errs = append(errs, field.Invalid(path.Child("user"), s.User, "at least one of user or group must be specified"))
	}
	return errs
}

func validateAttributes(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, path *field.Path) field.ErrorList {
	if (ra == nil) == (nra == nil) {
		return field.ErrorList{field.Invalid(path.Child("resourceAttributes"), ra, "exactly one of nonResourceAttributes or resourceAttributes must be specified")}
	}
	return nil
}

// validateEmptyMeta requires metadata to be empty (but for the namespace
// of a local review).
func validateEmptyMeta(m metav1.ObjectMeta, keepNamespace bool) field.ErrorList {
	want := metav1.ObjectMeta{}
	msg := "must be empty"
	if keepNamespace {
		want.Namespace = m.Namespace
		msg = "must be empty except for namespace"
	}
	// Fields the apiserver itself may set on decode are ignored.
	got := m
	got.CreationTimestamp, got.ManagedFields = metav1.Time{}, nil
	if !apiequality.Semantic.DeepEqual(got, want) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), m, msg)}
	}
	return nil
}

// specUser is the user a SubjectAccessReview asks about.
func specUser(s authorizationv1.SubjectAccessReviewSpec) user.Info {
	u := &user.DefaultInfo{Name: s.User, UID: s.UID, Groups: s.Groups}
	if len(s.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range s.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// decide asks the authorizer about u doing the described request.
func decide(ctx context.Context, authz authorizer.Authorizer, u user.Info, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	attrs := authorizer.AttributesRecord{User: u}
	if ra != nil {
		attrs.ResourceRequest = true
		attrs.Verb, attrs.Namespace, attrs.APIGroup, attrs.APIVersion = ra.Verb, ra.Namespace, ra.Group, ra.Version
		attrs.Resource, attrs.Subresource, attrs.Name = ra.Resource, ra.Subresource, ra.Name
		if fs := ra.FieldSelector; fs != nil {
			if fs.RawSelector != "" {
				sel, err := fields.ParseSelector(fs.RawSelector)
				attrs.FieldSelectorParsingErr = err
				if err == nil {
					attrs.FieldSelectorRequirements = sel.Requirements()
				}
			}
		}
		if ls := ra.LabelSelector; ls != nil && ls.RawSelector != "" {
			sel, err := labels.Parse(ls.RawSelector)
			attrs.LabelSelectorParsingErr = err
			if err == nil {
				attrs.LabelSelectorRequirements, _ = sel.Requirements()
			}
		}
	} else if nra != nil {
		attrs.Verb, attrs.Path = nra.Verb, nra.Path
	}
	d, reason, err := authz.Authorize(ctx, attrs)
	st := authorizationv1.SubjectAccessReviewStatus{
		Allowed: d == authorizer.DecisionAllow,
		Denied:  d == authorizer.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		st.EvaluationError = fmt.Sprint(err)
	}
	return st
}
