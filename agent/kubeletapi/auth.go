package kubeletapi

import (
	"fmt"
	"net/http"
	"strings"
)

// authenticate admits requests whose TLS client certificate verified against
// the client CA bundle, then asks Config.Authorize. Anonymous requests get
// 401 Unauthorized, refused ones 403 with the kubelet's message.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := userOf(r)
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb := verbOf(r.Method)
		if s.cfg.Authorize != nil && !s.cfg.Authorize(user, verb, r.URL.Path) {
			s.cfg.Logger.Info("forbidden", "user", user.Name, "verb", verb, "path", r.URL.Path)
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=[%s])",
				user.Name, verb, subresourceOf(r.URL.Path)), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// userOf is the user of a request's verified client certificate: its common
// name and organizations.
func userOf(r *http.Request) (User, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return User{}, false
	}
	leaf := r.TLS.VerifiedChains[0][0]
	if leaf.Subject.CommonName == "" {
		return User{}, false
	}
	return User{Name: leaf.Subject.CommonName, Groups: append([]string(nil), leaf.Subject.Organization...)}, true
}

// verbOf maps an HTTP method to the authorization verb, as the kubelet does.
func verbOf(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	default:
		return "get"
	}
}

// subresourceOf is the nodes subresource the kubelet authorizes a path as.
func subresourceOf(path string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	switch first {
	case "metrics", "healthz", "pods", "stats":
		return first
	case "logs":
		return "log"
	default:
		return "proxy"
	}
}
