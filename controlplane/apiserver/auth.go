package apiserver

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters"
)

// Authenticator identifies the caller of a request.
type Authenticator interface {
	// Authenticate returns the caller, or false when the request carries no
	// valid credential.
	Authenticate(r *http.Request) (user.Info, bool)
}

// authorize asks Config.Authorizer whether the caller (in r's context, with
// the request info) may make the request: nil when allowed, else a 403
// Forbidden in kube-apiserver's wording (500 when the authorizer failed
// without allowing). No Authorizer allows everything.
func (h *Handler) authorize(r *http.Request) error {
	if h.cfg.Authorizer == nil {
		return nil
	}
	attrs, err := filters.GetAuthorizerAttributes(r.Context())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	decision, reason, err := h.cfg.Authorizer.Authorize(r.Context(), attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		h.log.Error("authorization failed", "user", attrs.GetUser().GetName(), "verb", attrs.GetVerb(), "path", r.URL.Path, "err", err)
		return apierrors.NewInternalError(err)
	}
	return Forbidden(attrs, reason)
}

// Forbidden is the 403 error refusing attrs, worded as kube-apiserver's:
// `pods is forbidden: User "alice" cannot create resource "pods" in API
// group "" in the namespace "kube-system"`, followed by ": reason" when the
// authorizer gave one.
func Forbidden(attrs authorizer.Attributes, reason string) *apierrors.StatusError {
	msg := forbiddenMessage(attrs)
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: attrs.GetAPIGroup(), Resource: attrs.GetResource()}
	return apierrors.NewForbidden(gr, attrs.GetName(), errors.New(msg))
}

func forbiddenMessage(attrs authorizer.Attributes) string {
	name := ""
	if u := attrs.GetUser(); u != nil {
		name = u.GetName()
	}
	if !attrs.IsResourceRequest() {
		return fmt.Sprintf("User %q cannot %s path %q", name, attrs.GetVerb(), attrs.GetPath())
	}
	resource := attrs.GetResource()
	if sub := attrs.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	if ns := attrs.GetNamespace(); ns != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, attrs.GetVerb(), resource, attrs.GetAPIGroup(), ns)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, attrs.GetVerb(), resource, attrs.GetAPIGroup())
}
