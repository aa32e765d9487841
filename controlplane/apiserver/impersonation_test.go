package apiserver

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestImpersonation(t *testing.T) {
	// alice may impersonate user bob, group devs and extra scopes=view;
	// nothing else.
	var asked []string
	h := &Handler{log: slog.New(slog.DiscardHandler), cfg: Config{Authorizer: decideFunc(func(a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = append(asked, a.GetResource()+"/"+a.GetSubresource()+":"+a.GetNamespace()+"/"+a.GetName())
		if a.GetVerb() != "impersonate" || a.GetUser().GetName() != "alice" {
			return authorizer.DecisionNoOpinion, "", nil
		}
		switch a.GetResource() + "/" + a.GetName() {
		case "users/bob", "groups/devs", "userextras/view", "serviceaccounts/builder":
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})}}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	req := func(headers map[string][]string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
		for k, vs := range headers {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
		return r
	}

	u, err := h.impersonate(req(nil), alice)
	if err != nil || u != alice {
		t.Fatalf("no headers: %v %v, want the caller", u, err)
	}
	r := req(map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"devs"}, "Impersonate-Extra-Scopes": {"view"}})
	u, err = h.impersonate(r, alice)
	if err != nil || u.GetName() != "bob" || !slices.Equal(u.GetGroups(), []string{"devs", "system:authenticated"}) ||
		!slices.Equal(u.GetExtra()["scopes"], []string{"view"}) {
		t.Fatalf("impersonating bob: %+v %v", u, err)
	}
	if r.Header.Get("Impersonate-User") != "" {
		t.Fatal("impersonation headers left on the request")
	}
	u, err = h.impersonate(req(map[string][]string{"Impersonate-User": {"system:serviceaccount:ci:builder"}}), alice)
	if err != nil || !slices.Equal(u.GetGroups(), []string{"system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"}) {
		t.Fatalf("impersonating a service account: %+v %v", u, err)
	}
	if !slices.Contains(asked, "serviceaccounts/:ci/builder") {
		t.Fatalf("service account impersonation not checked as serviceaccounts in its namespace: %v", asked)
	}

	_, err = h.impersonate(req(map[string][]string{"Impersonate-User": {"carol"}}), alice)
	want := `users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("impersonating carol: %v, want %q", err, want)
	}
	if _, err := h.impersonate(req(map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"system:masters"}}), alice); !apierrors.IsForbidden(err) {
		t.Fatalf("impersonating system:masters: %v, want 403", err)
	}
	if _, err := h.impersonate(req(map[string][]string{"Impersonate-User": {"bob"}}), &user.DefaultInfo{Name: "mallory"}); !apierrors.IsForbidden(err) {
		t.Fatalf("mallory impersonating bob: %v, want 403", err)
	}
	if _, err := h.impersonate(req(map[string][]string{"Impersonate-Group": {"devs"}}), alice); !apierrors.IsBadRequest(err) {
		t.Fatalf("group without user: %v, want 400", err)
	}
}
