package kubeletapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// reviewServer is an apiserver serving only TokenReview and
// SubjectAccessReview over the real wire protocol (JSON over HTTPS), with
// a table of tokens and of allowed user/verb/subresource triples, counting
// the reviews it answers.
type reviewServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	tokens  map[string]authenticationv1.UserInfo
	allowed map[string]bool // user|verb|subresource
	broken  map[string]bool // users whose reviews fail with 500
	tokenN  int
	sars    []authorizationv1.SubjectAccessReviewSpec
}

func newReviewServer(t *testing.T) *reviewServer {
	t.Helper()
	rs := &reviewServer{tokens: map[string]authenticationv1.UserInfo{}, allowed: map[string]bool{}, broken: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		var review authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rs.mu.Lock()
		rs.tokenN++
		u, ok := rs.tokens[review.Spec.Token]
		rs.mu.Unlock()
		review.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, User: u}
		writeJSON(w, &review)
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		var review authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rs.mu.Lock()
		rs.sars = append(rs.sars, review.Spec)
		ra := review.Spec.ResourceAttributes
		allowed := ra != nil && rs.allowed[review.Spec.User+"|"+ra.Verb+"|"+ra.Subresource]
		broken := rs.broken[review.Spec.User]
		rs.mu.Unlock()
		if broken {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":500}`, http.StatusInternalServerError)
			return
		}
		review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed}
		writeJSON(w, &review)
	})
	rs.srv = httptest.NewTLSServer(mux)
	t.Cleanup(rs.srv.Close)
	return rs
}

func writeJSON(w http.ResponseWriter, obj any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj)
}

// client is a clientset talking to the server.
func (rs *reviewServer) client(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: rs.srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: pemOf(rs.srv.Certificate().Raw)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (rs *reviewServer) counts() (tokenReviews, sars int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.tokenN, len(rs.sars)
}

// sarsSince returns the SubjectAccessReview specs from the n-th on, as
// "user|groups|verb|resource/subresource|name|version".
func (rs *reviewServer) sarsSince(n int) []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []string
	for _, s := range rs.sars[n:] {
		ra := s.ResourceAttributes
		out = append(out, strings.Join([]string{s.User, strings.Join(s.Groups, ","), ra.Verb,
			ra.Resource + "/" + ra.Subresource, ra.Name, ra.Version}, "|"))
	}
	return out
}
