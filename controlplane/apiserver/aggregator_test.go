package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"berth/internal/api/scheme"
)

// fakeAggregator serves wardle.example.com/v1alpha1 and records what it
// was handed.
type fakeAggregator struct{ proxied []string }

var wardle = schema.GroupVersion{Group: "wardle.example.com", Version: "v1alpha1"}

func (f *fakeAggregator) Proxy(gv schema.GroupVersion) http.Handler {
	if gv != wardle {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := genericapirequest.UserFrom(r.Context())
		f.proxied = append(f.proxied, r.Method+" "+r.URL.Path+" as "+u.GetName())
		w.WriteHeader(http.StatusTeapot)
	})
}

func (f *fakeAggregator) APIGroups() []metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: wardle.String(), Version: wardle.Version}
	return []metav1.APIGroup{{Name: wardle.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}}
}

func (f *fakeAggregator) DiscoveryGroups(context.Context) []apidiscoveryv2.APIGroupDiscovery {
	return []apidiscoveryv2.APIGroupDiscovery{{ObjectMeta: metav1.ObjectMeta{Name: wardle.Group},
		Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: wardle.Version}}}}
}

type alice struct{}

func (alice) Authenticate(*http.Request) (user.Info, bool) {
	return &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}, true
}

// TestAggregatedGroupVersionsGoToTheAggregator: resource requests and the
// /apis/GROUP/VERSION discovery of an extension group-version go to the
// aggregator's proxy, authenticated; /apis and aggregated discovery list
// the extension group after the local ones; the rest is served here.
func TestAggregatedGroupVersionsGoToTheAggregator(t *testing.T) {
	agg := &fakeAggregator{}
	h, err := New(Config{Scheme: scheme.New(), Authenticator: alice{}, Aggregator: agg})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/apis/wardle.example.com/v1alpha1", "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f",
		"/apis/wardle.example.com/v1alpha1/flunders?watch=true"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusTeapot {
			t.Errorf("GET %s: %d, want the aggregator's 418", path, rec.Code)
		}
	}
	if len(agg.proxied) != 3 || agg.proxied[1] != "GET /apis/wardle.example.com/v1alpha1/namespaces/ns/flunders/f as alice" {
		t.Errorf("proxied %v", agg.proxied)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/wardle.example.com/v1beta1/flunders", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("another version: %d, want 404", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis", nil))
	var groups metav1.APIGroupList
	if err := json.Unmarshal(rec.Body.Bytes(), &groups); err != nil {
		t.Fatal(err)
	}
	if n := len(groups.Groups); n == 0 || groups.Groups[n-1].Name != wardle.Group {
		t.Errorf("/apis groups %v, want wardle.example.com last", groups.Groups)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/wardle.example.com", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/apis/wardle.example.com: %d", rec.Code)
	}
	req := httptest.NewRequest(http.MethodGet, "/apis", nil)
	req.Header.Set("Accept", aggregatedDiscoveryType)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if n := len(list.Items); n == 0 || list.Items[n-1].Name != wardle.Group {
		t.Errorf("aggregated /apis %v, want wardle.example.com last", list.Items)
	}
}

// TestNoTableForReviews: a resource served for create only (a review) has
// no table: a client accepting only a Table gets 406, as upstream (the
// Table conformance spec); one accepting JSON too gets JSON.
func TestNoTableForReviews(t *testing.T) {
	res := &Resource{GroupVersion: schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"}, Resource: "selfsubjectaccessreviews",
		Kind: "SelfSubjectAccessReview", Verbs: []string{"create"}}
	if res.printable() {
		t.Fatal("a create-only resource is printable")
	}
	h, err := New(Config{Scheme: scheme.New(), Authenticator: alice{}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if _, _, err := negotiation.NegotiateOutputMediaType(req, h.codecs, noTables{}); !apierrors.IsNotAcceptable(err) {
		t.Errorf("Table only: %v, want 406", err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io, application/json")
	if _, _, err := negotiation.NegotiateOutputMediaType(req, h.codecs, noTables{}); err != nil {
		t.Errorf("Table or JSON: %v", err)
	}
}
