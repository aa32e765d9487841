package testimages

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"berth/internal/errdefs"
)

func startRegistry(t *testing.T, cfg RegistryConfig) *Registry {
	t.Helper()
	r, err := StartRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestRegistryAnonymousPushPull(t *testing.T) {
	requireBusybox(t)
	img, err := BusyboxImage(hostBusybox)
	if err != nil {
		t.Fatal(err)
	}
	r := startRegistry(t, RegistryConfig{})
	if !strings.HasPrefix(r.Host(), "127.0.0.1:") {
		t.Fatalf("Host = %s, want 127.0.0.1:PORT", r.Host())
	}
	ref, err := r.Push(context.Background(), "berth/busybox:1", img)
	if err != nil {
		t.Fatal(err)
	}
	if ref != r.Host()+"/berth/busybox:1" {
		t.Errorf("ref = %s", ref)
	}
	pref, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Image(pref)
	if err != nil {
		t.Fatalf("pull back: %v", err)
	}
	d1, _ := img.Digest()
	d2, _ := got.Digest()
	if d1 != d2 {
		t.Errorf("pulled digest %s, pushed %s", d2, d1)
	}
}

func TestRegistryBasicAuth(t *testing.T) {
	requireBusybox(t)
	img, err := BusyboxImage(hostBusybox)
	if err != nil {
		t.Fatal(err)
	}
	r := startRegistry(t, RegistryConfig{Username: "puller", Password: "s3cret", Realm: "berth-auth"})
	ref, err := r.Push(context.Background(), "berth/busybox:1", img)
	if err != nil {
		t.Fatal(err)
	}

	// The challenge containerd and every client needs: 401 + Basic realm.
	for _, creds := range [][2]string{{"", ""}, {"puller", "wrong"}, {"other", "s3cret"}} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+r.Host()+"/v2/", nil)
		if creds[0] != "" {
			req.SetBasicAuth(creds[0], creds[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("creds %q: status %d, want 401", creds, resp.StatusCode)
		}
		if got := resp.Header.Get("WWW-Authenticate"); got != `Basic realm="berth-auth"` {
			t.Errorf("creds %q: WWW-Authenticate = %q", creds, got)
		}
	}

	pref, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	_, err = remote.Image(pref, remote.WithAuth(&authn.Basic{Username: "puller", Password: "wrong"}))
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
		t.Errorf("pull with wrong password = %v, want 401", err)
	}
	if _, err := remote.Image(pref); err == nil {
		t.Errorf("anonymous pull succeeded on the auth registry")
	}
	got, err := remote.Image(pref, remote.WithAuth(&authn.Basic{Username: "puller", Password: "s3cret"}))
	if err != nil {
		t.Fatalf("pull with the right credentials: %v", err)
	}
	d1, _ := img.Digest()
	d2, _ := got.Digest()
	if d1 != d2 {
		t.Errorf("pulled digest %s, pushed %s", d2, d1)
	}
}

func TestRegistryConfigValidation(t *testing.T) {
	for _, cfg := range []RegistryConfig{
		{Username: "only-user"},
		{Password: "only-password"},
		{Username: "a:b", Password: "x"},
	} {
		if _, err := StartRegistry(cfg); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("StartRegistry(%+v) = %v, want ErrInvalidArgument", cfg, err)
		}
	}
}

func TestRegistryCloseStopsServing(t *testing.T) {
	r, err := StartRegistry(RegistryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + r.Host() + "/v2/"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v2/ = %d", resp.StatusCode)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("registry still answers after Close")
	}
}

func TestPushRejectsBadReference(t *testing.T) {
	requireBusybox(t)
	r := startRegistry(t, RegistryConfig{})
	img, err := BusyboxImage(hostBusybox)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Push(context.Background(), "Upper/Case:1", img); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("Push(bad ref) = %v, want ErrInvalidArgument", err)
	}
}

// Push by host reaches a registry this process did not start (here one it
// did, used only through its address), anonymously.
func TestPushByHost(t *testing.T) {
	img, err := BinaryImage("pause", staticTestBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	anon := startRegistry(t, RegistryConfig{})
	ref, err := Push(context.Background(), anon.Host(), "berth/bin:1", img)
	if err != nil {
		t.Fatal(err)
	}
	if ref != anon.Host()+"/berth/bin:1" {
		t.Errorf("ref = %s", ref)
	}
	pref, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Image(pref)
	if err != nil {
		t.Fatalf("pull back: %v", err)
	}
	if d1, d2 := mustDigest(t, img), mustDigest(t, got); d1 != d2 {
		t.Errorf("pulled digest %s, pushed %s", d2, d1)
	}

	authed := startRegistry(t, RegistryConfig{Username: "u", Password: "p"})
	var terr *transport.Error
	if _, err := Push(context.Background(), authed.Host(), "berth/bin:1", img); !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous Push to an auth registry = %v, want a 401 transport error", err)
	}
	if _, err := Push(context.Background(), anon.Host(), "Upper/Case:1", img); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("Push(bad ref) = %v, want ErrInvalidArgument", err)
	}
}

// staticTestBinary is berth's pause, a small static binary.
func staticTestBinary(t *testing.T) []byte {
	t.Helper()
	bin, err := BuildPause(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func mustDigest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
