package apiserver

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// impersonate applies the Impersonate-* headers (kubectl --as, --as-group,
// --as-uid), as kube-apiserver: the caller must be allowed to "impersonate"
// each user, service account, group, uid and extra value asked for; the
// request then proceeds as that identity. Without the headers it returns
// the caller unchanged. With no Authorizer, impersonation is refused.
func (h *Handler) impersonate(r *http.Request, caller user.Info) (user.Info, error) {
	name := r.Header.Get(authenticationv1.ImpersonateUserHeader)
	groups := r.Header.Values(authenticationv1.ImpersonateGroupHeader)
	uid := r.Header.Get(authenticationv1.ImpersonateUIDHeader)
	extra := map[string][]string{}
	for k, vs := range r.Header {
		if key, ok := strings.CutPrefix(k, authenticationv1.ImpersonateUserExtraHeaderPrefix); ok {
			// Header keys are canonicalized; extra keys are lower case.
			extra[strings.ToLower(unescapeExtraKey(key))] = vs
		}
	}
	if name == "" {
		if len(groups) > 0 || uid != "" || len(extra) > 0 {
			return nil, apierrors.NewBadRequest("requested impersonation of groups, uid or extra without impersonating a user")
		}
		return caller, nil
	}
	if h.cfg.Authorizer == nil {
		return nil, apierrors.NewForbidden(authenticationv1.Resource("users"), name, fmt.Errorf("impersonation is not supported without authorization"))
	}
	check := func(attrs authorizer.AttributesRecord) error {
		attrs.User, attrs.Verb, attrs.ResourceRequest = caller, "impersonate", true
		d, reason, err := h.cfg.Authorizer.Authorize(r.Context(), attrs)
		if d == authorizer.DecisionAllow {
			return nil
		}
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		return Forbidden(attrs, reason)
	}
	target := &user.DefaultInfo{Name: name, UID: uid}
	if ns, sa, err := serviceaccount.SplitUsername(name); err == nil {
		if err := check(authorizer.AttributesRecord{Resource: "serviceaccounts", Namespace: ns, Name: sa}); err != nil {
			return nil, err
		}
		target.Groups = serviceaccount.MakeGroupNames(ns)
	} else if err := check(authorizer.AttributesRecord{Resource: "users", Name: name}); err != nil {
		return nil, err
	}
	for _, g := range groups {
		if err := check(authorizer.AttributesRecord{Resource: "groups", Name: g}); err != nil {
			return nil, err
		}
		if !slices.Contains(target.Groups, g) {
			target.Groups = append(target.Groups, g)
		}
	}
	if uid != "" {
		if err := check(authorizer.AttributesRecord{APIGroup: authenticationv1.GroupName, Resource: "uids", Name: uid}); err != nil {
			return nil, err
		}
	}
	for k, vs := range extra {
		for _, v := range vs {
			if err := check(authorizer.AttributesRecord{APIGroup: authenticationv1.GroupName, Resource: "userextras", Subresource: k, Name: v}); err != nil {
				return nil, err
			}
		}
		if target.Extra == nil {
			target.Extra = map[string][]string{}
		}
		target.Extra[k] = vs
	}
	switch {
	case name == user.Anonymous:
		if !slices.Contains(target.Groups, user.AllUnauthenticated) {
			target.Groups = append(target.Groups, user.AllUnauthenticated)
		}
	case !slices.Contains(target.Groups, user.AllAuthenticated):
		target.Groups = append(target.Groups, user.AllAuthenticated)
	}
	// The impersonation headers are consumed here.
	for k := range r.Header {
		if strings.HasPrefix(k, "Impersonate-") {
			r.Header.Del(k)
		}
	}
	return target, nil
}

// unescapeExtraKey undoes the percent-encoding clients apply to extra keys
// in header names.
func unescapeExtraKey(key string) string {
	out, err := url.PathUnescape(key)
	if err != nil {
		return key
	}
	return out
}
