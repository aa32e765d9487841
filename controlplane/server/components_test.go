package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

type fixedAuthenticator struct{ name string }

func (f fixedAuthenticator) Authenticate(*http.Request) (user.Info, bool) {
	if f.name == "" {
		return nil, false
	}
	return &user.DefaultInfo{Name: f.name}, true
}

func TestLoopbackAuthenticator(t *testing.T) {
	a := loopbackAuthenticator{token: "loop", next: fixedAuthenticator{}}
	req := httptest.NewRequest(http.MethodGet, "/api", nil)
	req.Header.Set("Authorization", "Bearer loop")
	u, ok := a.Authenticate(req)
	if !ok || u.GetName() != LoopbackUser || u.GetGroups()[0] != "system:masters" {
		t.Fatalf("loopback token: %v %v", u, ok)
	}
	req.Header.Set("Authorization", "Bearer other")
	if _, ok := a.Authenticate(req); ok {
		t.Fatal("another token authenticated as loopback")
	}
	a.next = fixedAuthenticator{name: "alice"}
	if u, ok := a.Authenticate(req); !ok || u.GetName() != "alice" {
		t.Fatalf("other credentials not passed on: %v %v", u, ok)
	}
}
