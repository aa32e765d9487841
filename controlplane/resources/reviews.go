package resources

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"

	"berth/controlplane/apiserver"
	"berth/internal/errdefs"
)

// ReviewConfig is what the review APIs answer from: TokenReview
// (authentication.k8s.io/v1) and SubjectAccessReview,
// LocalSubjectAccessReview, SelfSubjectAccessReview and
// SelfSubjectRulesReview (authorization.k8s.io/v1).
type ReviewConfig struct {
	// Tokens authenticates a TokenReview's spec.token: the apiserver's
	// bearer-token authenticators.
	Tokens authenticator.Token
	// APIAudiences are the audiences a TokenReview without spec.audiences
	// checks the token against (none: any).
	APIAudiences []string
	// Authorizer answers the access reviews, as it decides requests.
	Authorizer authorizer.Authorizer
	// Rules lists a user's rules for SelfSubjectRulesReview.
	Rules authorizer.RuleResolver
}

// ReviewResources returns the five review resources. Nothing is stored:
// each serves only create, answering in the returned object's status.
func ReviewResources(cfg ReviewConfig) ([]*apiserver.Resource, error) {
	if cfg.Tokens == nil || cfg.Authorizer == nil || cfg.Rules == nil {
		return nil, fmt.Errorf("resources: ReviewConfig.Tokens, Authorizer and Rules are required: %w", errdefs.ErrInvalidArgument)
	}
	return []*apiserver.Resource{
		tokenReviews(cfg.Tokens, cfg.APIAudiences),
		subjectAccessReviews(cfg.Authorizer),
		localSubjectAccessReviews(cfg.Authorizer),
		selfSubjectAccessReviews(cfg.Authorizer),
		selfSubjectRulesReviews(cfg.Rules),
	}, nil
}

// Add serves more resources (built outside Build, such as the reviews);
// a resource already served is an error.
func (s *Set) Add(rs ...*apiserver.Resource) error {
	for _, r := range rs {
		if _, dup := s.ByGVR[r.GroupVersionResource()]; dup {
			return fmt.Errorf("resources: %v served twice: %w", r.GroupVersionResource(), errdefs.ErrInvalidArgument)
		}
		s.Resources = append(s.Resources, r)
		s.ByGVR[r.GroupVersionResource()] = r
	}
	return nil
}

// createOnlyREST serves a resource that is not stored: only Create is
// served (apiserver.Resource.Verbs), so the embedded rest.StandardStorage
// stays nil and is never called.
type createOnlyREST struct {
	rest.StandardStorage
	newObj     func() runtime.Object
	namespaced bool
	// create answers one review; the object has been decoded and defaulted.
	create func(ctx context.Context, obj runtime.Object) (runtime.Object, error)
}

// New returns an empty object of the resource's kind.
func (c *createOnlyREST) New() runtime.Object { return c.newObj() }

// Destroy has nothing to release.
func (c *createOnlyREST) Destroy() {}

// NamespaceScoped reports whether the resource is namespaced.
func (c *createOnlyREST) NamespaceScoped() bool { return c.namespaced }

// Create runs admission's validation, then answers.
func (c *createOnlyREST) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return nil, err
		}
	}
	out, err := c.create(ctx, obj)
	if err != nil {
		return nil, err
	}
	if m, ok := out.(metav1.Object); ok {
		m.SetCreationTimestamp(metav1.Now())
	}
	return out, nil
}

// createOnly builds the apiserver.Resource of a create-only review.
func createOnly(gv schema.GroupVersion, resource, kind string, namespaced bool, newObj func() runtime.Object,
	create func(ctx context.Context, obj runtime.Object) (runtime.Object, error)) *apiserver.Resource {
	return &apiserver.Resource{
		GroupVersion: gv, Resource: resource, Kind: kind, SingularName: strings.ToLower(kind), Namespaced: namespaced,
		Store:        &createOnlyREST{newObj: newObj, namespaced: namespaced, create: create},
		Subresources: map[string]apiserver.Subresource{},
		Verbs:        []string{"create"},
	}
}

// badType is the error for an object of the wrong type (a bug: the
// apiserver decodes into New()).
func badType(obj runtime.Object) error {
	return apierrors.NewBadRequest(fmt.Sprintf("unexpected object of type %T", obj))
}
