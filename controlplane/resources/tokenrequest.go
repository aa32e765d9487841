package resources

import (
	"context"
	"fmt"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"

	"berth/controlplane/apiserver"
	"berth/controlplane/serviceaccount"
	"berth/internal/errdefs"
)

// TokenRequest limits and defaults, as upstream.
const (
	// DefaultTokenExpirationSeconds is a TokenRequest's lifetime unless it asks.
	DefaultTokenExpirationSeconds int64 = 3600
	// MinTokenExpirationSeconds is the shortest lifetime one may ask for.
	MinTokenExpirationSeconds int64 = 600
	// maxTokenExpirationSeconds bounds what validation accepts (2^32 s).
	maxTokenExpirationSeconds int64 = 1 << 32
	// WarnOnlyTokenExpirationSeconds is the lifetime the ServiceAccount
	// admission plugin asks for in projected volumes; with ExtendExpiration
	// such pod-bound tokens stay valid for ExtendedTokenExpiration and carry
	// "warnafter" at the requested lifetime.
	WarnOnlyTokenExpirationSeconds int64 = 3607
	// ExtendedTokenExpiration is the lifetime of an extended token (a year).
	ExtendedTokenExpiration = 365 * 24 * time.Hour
)

// TokenRequestConfig configures serviceaccounts/token (the TokenRequest API).
type TokenRequestConfig struct {
	// Issuer signs the tokens; required.
	Issuer *serviceaccount.Issuer
	// APIAudiences are the audiences of a request that names none; default
	// the issuer (kube-apiserver's --api-audiences).
	APIAudiences []string
	// MaxExpiration, when positive, shortens longer requests to it with a
	// warning (--service-account-max-token-expiration).
	MaxExpiration time.Duration
	// ExtendExpiration extends pod-bound tokens asked for with
	// WarnOnlyTokenExpirationSeconds (--service-account-extend-token-expiration).
	ExtendExpiration bool
}

// tokenRequestREST serves POST serviceaccounts/NAME/token: a signed token
// for the service account, bound to the pod, secret or node named in
// spec.boundObjectRef when set.
type tokenRequestREST struct {
	cfg    TokenRequestConfig
	lookup serviceaccount.RESTGetter
}

var _ rest.NamedCreater = &tokenRequestREST{}

// serveTokenRequest adds serviceaccounts/token to the built set.
func serveTokenRequest(set *Set, cfg TokenRequestConfig) error {
	if cfg.Issuer == nil {
		return fmt.Errorf("resources: TokenRequest: Issuer is required: %w", errdefs.ErrInvalidArgument)
	}
	if len(cfg.APIAudiences) == 0 {
		cfg.APIAudiences = []string{cfg.Issuer.Issuer()}
	}
	if cfg.MaxExpiration < 0 {
		return fmt.Errorf("resources: TokenRequest: MaxExpiration %s is negative: %w", cfg.MaxExpiration, errdefs.ErrInvalidArgument)
	}
	lookup, err := set.ServiceAccountLookup()
	if err != nil {
		return fmt.Errorf("resources: TokenRequest: %w", err)
	}
	set.ByGVR[corev1.SchemeGroupVersion.WithResource("serviceaccounts")].Subresources["token"] = apiserver.Subresource{
		Kind:    authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"),
		Storage: &tokenRequestREST{cfg: cfg, lookup: lookup},
	}
	return nil
}

// ServiceAccountLookup reads service accounts, pods, secrets and nodes
// from the set's stores, for issuing and verifying service-account tokens.
func (s *Set) ServiceAccountLookup() (serviceaccount.RESTGetter, error) {
	store := func(resource string) rest.Getter {
		if r := s.ByGVR[corev1.SchemeGroupVersion.WithResource(resource)]; r != nil {
			return r.Store
		}
		return nil
	}
	g := serviceaccount.RESTGetter{ServiceAccounts: store("serviceaccounts"), Pods: store("pods"), Secrets: store("secrets"), Nodes: store("nodes")}
	return g, g.Validate()
}

// New implements rest.Storage.
func (t *tokenRequestREST) New() runtime.Object { return &authenticationv1.TokenRequest{} }

// Destroy implements rest.Storage.
func (t *tokenRequestREST) Destroy() {}

var tokenRequestKind = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest").GroupKind()

// validateTokenRequest checks the spec, as upstream's validation.
func validateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if exp := tr.Spec.ExpirationSeconds; exp != nil {
		if *exp < MinTokenExpirationSeconds {
			errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *exp, "may not specify a duration less than 10 minutes"))
		}
		if *exp > maxTokenExpirationSeconds {
			errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *exp, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		p := spec.Child("boundObjectRef")
		if ref.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "the bound object's name is required"))
		}
		if ref.Kind == "" {
			errs = append(errs, field.Required(p.Child("kind"), "the bound object's kind is required"))
		}
	}
	return errs
}

// Create implements rest.NamedCreater.
func (t *tokenRequestREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", obj))
	}
	req = req.DeepCopy()
	if req.Spec.ExpirationSeconds == nil {
		exp := DefaultTokenExpirationSeconds
		req.Spec.ExpirationSeconds = &exp
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = slices.Clone(t.cfg.APIAudiences)
	}
	if errs := validateTokenRequest(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(tokenRequestKind, name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, req); err != nil {
			return nil, err
		}
	}
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	sa, err := t.lookup.GetServiceAccount(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	spec := serviceaccount.TokenSpec{ServiceAccount: sa, Audiences: req.Spec.Audiences}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		if err := t.bind(ctx, namespace, name, ref, &spec); err != nil {
			return nil, err
		}
	}
	if max := t.cfg.MaxExpiration; max > 0 && time.Duration(*req.Spec.ExpirationSeconds)*time.Second > max {
		warning.AddWarning(ctx, "", fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, int64(max.Seconds())))
		shortened := int64(max.Seconds())
		req.Spec.ExpirationSeconds = &shortened
	}
	requested := time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	spec.Lifetime = requested
	if t.cfg.ExtendExpiration && spec.Pod != nil && *req.Spec.ExpirationSeconds == WarnOnlyTokenExpirationSeconds && t.apiAudiencesOnly(req.Spec.Audiences) {
		spec.Lifetime, spec.WarnAfter = ExtendedTokenExpiration, requested
	}
	token, exp, err := t.cfg.Issuer.Issue(spec)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	// The status shows the requested lifetime even for an extended token,
	// so its holder rotates it as it asked to.
	issued := exp.Add(-spec.Lifetime)
	req.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(issued.Add(requested))}
	return req, nil
}

// apiAudiencesOnly: every requested audience is one of the API's.
func (t *tokenRequestREST) apiAudiencesOnly(auds []string) bool {
	for _, a := range auds {
		if !slices.Contains(t.cfg.APIAudiences, a) {
			return false
		}
	}
	return true
}

// bind checks the bound object exists (with the UID given, if any) and
// records it in spec; a pod's node is recorded too.
func (t *tokenRequestREST) bind(ctx context.Context, namespace, name string, ref *authenticationv1.BoundObjectReference, spec *serviceaccount.TokenSpec) error {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("spec.boundObjectRef.apiVersion %q: %v", ref.APIVersion, err))
	}
	gvk := gv.WithKind(ref.Kind)
	var uid string
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		pod, err := t.lookup.GetPod(ctx, namespace, ref.Name)
		if err != nil {
			return err
		}
		if pod.Spec.ServiceAccountName != name {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", name))
		}
		uid, spec.Pod = string(pod.UID), pod
		if pod.Spec.NodeName != "" {
			node, err := t.lookup.GetNode(ctx, pod.Spec.NodeName)
			if err != nil {
				// The node's name alone still says where the pod runs.
				node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pod.Spec.NodeName}}
			}
			spec.Node = node
		}
	case gvk.Group == "" && gvk.Kind == "Secret":
		secret, err := t.lookup.GetSecret(ctx, namespace, ref.Name)
		if err != nil {
			return err
		}
		uid, spec.Secret = string(secret.UID), secret
	case gvk.Group == "" && gvk.Kind == "Node":
		node, err := t.lookup.GetNode(ctx, ref.Name)
		if err != nil {
			return err
		}
		uid, spec.Node = string(node.UID), node
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to object of type %s", name, gvk.String()))
	}
	if ref.UID != "" && string(ref.UID) != uid {
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return nil
}
