package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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

func TestSupervisorStopsAllOnFirstFailure(t *testing.T) {
	boom := errors.New("boom")
	stopped := make(chan struct{})
	sup := startSupervisor(context.Background(), slog.New(slog.DiscardHandler), []component{
		{name: "waits", run: func(ctx context.Context) error { <-ctx.Done(); close(stopped); return nil }},
		{name: "fails", run: func(context.Context) error { return boom }},
	})
	select {
	case err := <-sup.failed:
		if !errors.Is(err, boom) {
			t.Fatalf("failure %v, want boom", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("failure not reported")
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the other component was not stopped")
	}
	sup.stop(10 * time.Second)
	select {
	case <-sup.done:
	default:
		t.Fatal("stop returned before the components ended")
	}
}
