package apiserver

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"berth/internal/api/scheme"
)

// bearerUsers authenticates "Bearer NAME" as NAME; "admin" is in
// system:masters.
type bearerUsers struct{}

func (bearerUsers) Authenticate(r *http.Request) (user.Info, bool) {
	name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, false
	}
	u := &user.DefaultInfo{Name: name}
	if name == "admin" {
		u.Groups = []string{user.SystemPrivilegedGroup}
	}
	return u, true
}

// TestProfilingOnlyForAuthorizedCallers: /debug/pprof serves the runtime's
// profiles to a caller authorized for the path (get), 401 without a
// credential, 403 to others; off, it is not served at all.
func TestProfilingOnlyForAuthorizedCallers(t *testing.T) {
	var asked []authorizer.Attributes
	authz := decideFunc(func(a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = append(asked, a)
		if slices.Contains(a.GetUser().GetGroups(), user.SystemPrivilegedGroup) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	handler := func(profiling bool) *Handler {
		h, err := New(Config{Scheme: scheme.New(), Authenticator: bearerUsers{}, Authorizer: authz, Profiling: profiling})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	get := func(h *Handler, who, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if who != "" {
			r.Header.Set("Authorization", "Bearer "+who)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	on := handler(true)

	for _, c := range []struct {
		path, want string
	}{
		{"/debug/pprof/", "goroutine"},
		{"/debug/pprof/goroutine?debug=1", "goroutine profile:"},
		{"/debug/pprof/heap?debug=1", "heap profile:"},
		{"/debug/pprof/symbol", "num_symbols:"},
	} {
		asked = nil
		w := get(on, "admin", c.path)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("admin GET %s: %d %.200q, want 200 with %q", c.path, w.Code, w.Body.String(), c.want)
		}
		path, _, _ := strings.Cut(c.path, "?")
		if len(asked) != 1 || asked[0].IsResourceRequest() || asked[0].GetPath() != path || asked[0].GetVerb() != "get" {
			t.Errorf("GET %s asked the authorizer %+v, want one non-resource get of %s", c.path, asked, path)
		}
	}
	if w := get(on, "admin", "/debug/pprof"); w.Code != http.StatusFound || w.Header().Get("Location") != "/debug/pprof/" {
		t.Errorf("admin GET /debug/pprof: %d Location %q, want a redirect to /debug/pprof/", w.Code, w.Header().Get("Location"))
	}
	// The command line may hold secrets: upstream does not serve it.
	if w := get(on, "admin", "/debug/pprof/cmdline"); w.Code != http.StatusNotFound {
		t.Errorf("admin GET /debug/pprof/cmdline: %d, want 404", w.Code)
	}
	if w := get(on, "", "/debug/pprof/heap"); w.Code != http.StatusUnauthorized {
		t.Errorf("anonymous GET /debug/pprof/heap: %d, want 401", w.Code)
	}
	w := get(on, "alice", "/debug/pprof/heap")
	if want := `forbidden: User \"alice\" cannot get path \"/debug/pprof/heap\"`; w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), want) {
		t.Errorf("alice GET /debug/pprof/heap: %d %s, want 403 saying %s", w.Code, w.Body.String(), want)
	}
	if w := get(handler(false), "admin", "/debug/pprof/"); w.Code != http.StatusNotFound {
		t.Errorf("admin GET /debug/pprof/ with profiling off: %d, want 404", w.Code)
	}
}
