package apiserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"berth/internal/api/scheme"
)

// TestPriorityAndFairnessWrapsAuthenticatedRequests: the filter sees
// every authenticated request with its user and request info, before
// authorization (a refusal it answers never reaches the authorizer);
// unauthenticated requests never reach it.
func TestPriorityAndFairnessWrapsAuthenticatedRequests(t *testing.T) {
	var filtered []string
	authorized := 0
	authz := decideFunc(func(authorizer.Attributes) (authorizer.Decision, string, error) {
		authorized++
		return authorizer.DecisionAllow, "", nil
	})
	filter := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, _ := genericapirequest.UserFrom(r.Context())
			info, _ := genericapirequest.RequestInfoFrom(r.Context())
			if u == nil || info == nil {
				t.Fatalf("no user or request info in the filter's context")
			}
			filtered = append(filtered, u.GetName()+" "+info.Verb+" "+info.Path)
			if u.GetName() == "noisy" {
				http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
				return
			}
			w.Header().Set("X-Kubernetes-PF-FlowSchema-UID", "fs-uid")
			next.ServeHTTP(w, r)
		})
	}
	h, err := New(Config{Scheme: scheme.New(), Authenticator: bearerUsers{}, Authorizer: authz, PriorityAndFairness: filter})
	if err != nil {
		t.Fatal(err)
	}
	get := func(who string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/version", nil)
		if who != "" {
			r.Header.Set("Authorization", "Bearer "+who)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get("quiet"); w.Code != http.StatusOK || w.Header().Get("X-Kubernetes-PF-FlowSchema-UID") != "fs-uid" {
		t.Errorf("quiet: %d, headers %v", w.Code, w.Header())
	}
	if w := get("noisy"); w.Code != http.StatusTooManyRequests {
		t.Errorf("noisy: %d, want 429", w.Code)
	}
	if w := get(""); w.Code != http.StatusUnauthorized {
		t.Errorf("anonymous: %d, want 401", w.Code)
	}
	if len(filtered) != 2 || filtered[0] != "quiet get /version" || filtered[1] != "noisy get /version" {
		t.Errorf("filtered %q", filtered)
	}
	if authorized != 1 {
		t.Errorf("authorizer asked %d times, want once (the quiet request)", authorized)
	}
}
