package kubeletapi

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// The kubelet's defaults (KubeletConfiguration v1beta1): how long a
// TokenReview answer is kept, and an allowed and a refused
// SubjectAccessReview answer.
const (
	DefaultTokenCacheTTL        = 2 * time.Minute
	DefaultAuthorizedCacheTTL   = 5 * time.Minute
	DefaultUnauthorizedCacheTTL = 30 * time.Second
)

// webhookRetryBackoff is how TokenReviews and SubjectAccessReviews are
// retried, as the kubelet's (the apiserver options' default).
func webhookRetryBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// WebhookAuthorizer is the kubelet's --authorization-mode=Webhook: every
// decision is a SubjectAccessReview through client, allowed answers kept
// for DefaultAuthorizedCacheTTL and refused ones for
// DefaultUnauthorizedCacheTTL.
func WebhookAuthorizer(client authorizationv1client.AuthorizationV1Interface) (authorizer.Authorizer, error) {
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client,
		AllowCacheTTL:             DefaultAuthorizedCacheTTL,
		DenyCacheTTL:              DefaultUnauthorizedCacheTTL,
		WebhookRetryBackoff:       webhookRetryBackoff(),
	}.New()
	if err != nil {
		return nil, fmt.Errorf("kubeletapi: webhook authorizer: %w", err)
	}
	return authz, nil
}

// newAuthenticator is the kubelet's authenticator: client certificates
// verified against caPEM (common name the user, organizations the groups),
// then, with cfg.TokenReviews, bearer tokens (header or WebSocket
// protocol) by TokenReview, cached for cfg.TokenCacheTTL. Anonymous
// requests are not authenticated.
func newAuthenticator(cfg Config, caPEM []byte) (authenticator.Request, error) {
	ca, err := dynamiccertificates.NewStaticCAContent("client-ca-bundle", caPEM)
	if err != nil {
		return nil, fmt.Errorf("kubeletapi: Config.ClientCAFile: %w", err)
	}
	dc := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                          &apiserverconfig.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                           cfg.TokenCacheTTL,
		ClientCertificateCAContentProvider: ca,
	}
	if cfg.TokenReviews != nil {
		dc.TokenAccessReviewClient = cfg.TokenReviews
		dc.WebhookRetryBackoff = webhookRetryBackoff()
	}
	authn, _, err := dc.New()
	if err != nil {
		return nil, fmt.Errorf("kubeletapi: authenticator: %w", err)
	}
	return authn, nil
}

// authenticate authenticates and authorizes every request as the kubelet
// does: unauthenticated ones get 401 Unauthorized, ones no attribute of
// requestAttributes allows get 403 with the kubelet's message, authorizer
// errors 500.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := s.authn.AuthenticateRequest(r)
		if err != nil {
			s.cfg.Logger.Debug("authentication failed", "err", err)
		}
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := requestAttributes(resp.User, r, s.cfg.NodeName)
		subresources := make([]string, 0, len(attrs))
		for _, a := range attrs {
			subresources = append(subresources, a.GetSubresource())
			decision, _, err := s.cfg.Authorizer.Authorize(r.Context(), a)
			if err != nil {
				s.cfg.Logger.Warn("authorization error", "user", resp.User.GetName(), "verb", a.GetVerb(), "subresource", a.GetSubresource(), "err", err)
				http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					resp.User.GetName(), a.GetVerb(), a.GetResource(), a.GetSubresource()), http.StatusInternalServerError)
				return
			}
			if decision == authorizer.DecisionAllow {
				next.ServeHTTP(w, r)
				return
			}
		}
		s.cfg.Logger.Info("forbidden", "user", resp.User.GetName(), "verb", attrs[0].GetVerb(), "path", r.URL.Path, "subresources", subresources)
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)",
			resp.User.GetName(), attrs[0].GetVerb(), attrs[0].GetResource(), subresources), http.StatusForbidden)
	})
}

// requestAttributes are the kubelet's authorization attributes for a
// request, tried in order until one is allowed: verb from the method
// (POST create, GET get, PUT update, PATCH patch, DELETE delete), resource
// nodes named node, and the subresource the path maps to — /stats stats,
// /metrics metrics, /logs log, /checkpoint checkpoint, /statusz statusz,
// /flagz configz, anything else proxy; /pods, /runningpods, /healthz and
// /configz are first tried as pods, pods, healthz and configz (the
// kubelet's fine-grained authorization), then as proxy.
func requestAttributes(u user.Info, r *http.Request, node string) []authorizer.Attributes {
	var verb string
	switch r.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodGet:
		verb = "get"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	path := r.URL.Path
	var subresources []string
	switch {
	case isSubpath(path, "/pods"), isSubpath(path, "/runningpods"):
		subresources = append(subresources, "pods")
	case isSubpath(path, "/healthz"):
		subresources = append(subresources, "healthz")
	case isSubpath(path, "/configz"):
		subresources = append(subresources, "configz")
	}
	switch {
	case isSubpath(path, "/stats"):
		subresources = append(subresources, "stats")
	case isSubpath(path, "/metrics"):
		subresources = append(subresources, "metrics")
	case isSubpath(path, "/logs"):
		subresources = append(subresources, "log")
	case isSubpath(path, "/checkpoint"):
		subresources = append(subresources, "checkpoint")
	case isSubpath(path, "/statusz"):
		subresources = append(subresources, "statusz")
	case isSubpath(path, "/flagz"):
		subresources = append(subresources, "configz")
	default:
		subresources = append(subresources, "proxy")
	}
	attrs := make([]authorizer.Attributes, 0, len(subresources))
	for _, sub := range subresources {
		attrs = append(attrs, authorizer.AttributesRecord{
			User: u, Verb: verb, APIVersion: "v1", Resource: "nodes", Subresource: sub,
			Name: node, ResourceRequest: true, Path: path,
		})
	}
	return attrs
}

// isSubpath reports whether subpath is path or below it.
func isSubpath(subpath, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return subpath == path || (strings.HasPrefix(subpath, path) && subpath[len(path)] == '/')
}
