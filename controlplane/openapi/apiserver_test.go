package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// testAPI is the least an apiserver must serve besides the OpenAPI
// documents for kubectl explain and apply to run: discovery built from the
// same resource list, and an in-memory pods collection in namespace
// "default" that records the requests it gets.
type testAPI struct {
	docs      *Documents
	resources []Resource

	mu       sync.Mutex
	requests []recordedRequest
	pods     map[string][]byte
}

// recordedRequest is one request the test API received.
type recordedRequest struct {
	Method, Path, RawQuery, ContentType string
	Body                                []byte
}

const testPodsPath = "/api/v1/namespaces/default/pods"

// startTestAPI serves docs and the minimal API on a plain-HTTP loopback
// server that is closed when the test ends.
func startTestAPI(t *testing.T, docs *Documents, resources []Resource) (*httptest.Server, *testAPI) {
	t.Helper()
	api := &testAPI{docs: docs, resources: resources, pods: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.Handle("/openapi/", docs.Handler())
	mux.HandleFunc("/api", api.serveCoreVersions)
	mux.HandleFunc("/apis", api.serveGroups)
	mux.HandleFunc("/api/v1", api.serveResources)
	mux.HandleFunc("/apis/{group}/{version}", api.serveResources)
	mux.HandleFunc(testPodsPath, api.servePods)
	mux.HandleFunc(testPodsPath+"/{name}", api.servePods)
	srv := httptest.NewServer(api.record(mux))
	t.Cleanup(srv.Close)
	return srv, api
}

func (a *testAPI) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		a.mu.Lock()
		a.requests = append(a.requests, recordedRequest{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
			ContentType: r.Header.Get("Content-Type"), Body: body})
		a.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// recorded returns the requests received so far with the given method and
// path.
func (a *testAPI) recorded(method, path string) []recordedRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []recordedRequest
	for _, r := range a.requests {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *testAPI) groupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range a.resources {
		gv := r.GVK.GroupVersion()
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	return out
}

func (a *testAPI) serveCoreVersions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
}

func (a *testAPI) serveGroups(w http.ResponseWriter, _ *http.Request) {
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, gv := range a.groupVersions() {
		if gv.Group == "" {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		list.Groups = append(list.Groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	writeJSON(w, http.StatusOK, list)
}

func (a *testAPI) serveResources(w http.ResponseWriter, r *http.Request) {
	gv := schema.GroupVersion{Version: "v1"}
	if r.PathValue("group") != "" {
		gv = schema.GroupVersion{Group: r.PathValue("group"), Version: r.PathValue("version")}
	}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, res := range a.resources {
		if res.GVK.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: res.Resource, Namespaced: res.Namespaced,
			Kind: res.GVK.Kind, Verbs: res.Verbs})
		for _, sub := range res.Subresources {
			kind := res.GVK.Kind
			if s := subresourceOps[sub]; !s.gvk.Empty() {
				kind = s.gvk.Kind
			}
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: res.Resource + "/" + sub,
				Namespaced: res.Namespaced, Kind: kind, Verbs: []string{VerbGet}})
		}
	}
	if len(list.APIResources) == 0 {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// servePods keeps pods in memory: GET, POST (create) and PATCH (which
// answers with the stored pod; the test inspects the patch itself).
func (a *testAPI) servePods(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	name := r.PathValue("name")
	notFound := func() {
		writeJSON(w, http.StatusNotFound, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
			Message: `pods "` + name + `" not found`,
			Details: &metav1.StatusDetails{Name: name, Kind: "pods"}})
	}
	switch {
	case r.Method == http.MethodGet && name != "":
		if pod, ok := a.pods[name]; ok {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(pod)
			return
		}
		notFound()
	case r.Method == http.MethodPost && name == "":
		body, _ := io.ReadAll(r.Body)
		var pod map[string]any
		if err := json.Unmarshal(body, &pod); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		meta, _ := pod["metadata"].(map[string]any)
		podName, _ := meta["name"].(string)
		meta["namespace"] = "default"
		meta["resourceVersion"] = "1"
		stored, _ := json.Marshal(pod)
		a.pods[podName] = stored
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(stored)
	case r.Method == http.MethodPatch && name != "":
		pod, ok := a.pods[name]
		if !ok {
			notFound()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(pod)
	default:
		http.Error(w, "not served by the test API", http.StatusMethodNotAllowed)
	}
}
