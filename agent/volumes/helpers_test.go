package volumes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"

	"berth/internal/mountinfo"
	"berth/internal/prereq"
)

// requireRoot fails (CI=true) or skips a test that needs to mount.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	prereq.Missing(t, "volumes: not root; tests that mount need root")
}

// fakeAPIServer speaks the Kubernetes REST protocol for what the volume
// manager reads: GET configmaps and secrets, POST serviceaccounts/<name>/token.
type fakeAPIServer struct {
	srv *httptest.Server

	mu            sync.Mutex
	configMaps    map[string]*v1.ConfigMap // ns/name
	secrets       map[string]*v1.Secret
	forbidden     map[string]bool // ns/name of secrets that answer 403
	tokenRequests []tokenCall
	tokenSerial   int
	tokenTTL      time.Duration
	clock         *testingclock.FakeClock
}

type tokenCall struct {
	Namespace, Name string
	Req             authenticationv1.TokenRequest
}

func newFakeAPIServer(t *testing.T, clk *testingclock.FakeClock) *fakeAPIServer {
	f := &fakeAPIServer{
		configMaps: map[string]*v1.ConfigMap{},
		secrets:    map[string]*v1.Secret{},
		forbidden:  map[string]bool{},
		tokenTTL:   time.Hour,
		clock:      clk,
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPIServer) client(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{
		Host: f.srv.URL,
		QPS:  1000, Burst: 1000,
		ContentConfig: rest.ContentConfig{
			ContentType:        "application/json",
			AcceptContentTypes: "application/json",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func (f *fakeAPIServer) putConfigMap(ns, name string, data map[string]string, binary map[string][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.configMaps[ns+"/"+name] = &v1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       data, BinaryData: binary,
	}
}

func (f *fakeAPIServer) putSecret(ns, name string, data map[string][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.secrets[ns+"/"+name] = &v1.Secret{
		TypeMeta:   metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       data,
	}
}

func (f *fakeAPIServer) tokenCalls() []tokenCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tokenCall(nil), f.tokenRequests...)
}

func (f *fakeAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	// /api/v1/namespaces/<ns>/<resource>/<name>[/<sub>]
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/") || len(parts) < 3 {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource", "", "")
		return
	}
	ns, resource, name := parts[0], parts[1], parts[2]
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && len(parts) == 3 && resource == "configmaps":
		if cm, ok := f.configMaps[ns+"/"+name]; ok {
			writeJSON(w, http.StatusOK, cm)
			return
		}
	case r.Method == http.MethodGet && len(parts) == 3 && resource == "secrets":
		if f.forbidden[ns+"/"+name] {
			writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden,
				fmt.Sprintf(`secrets %q is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace %q`, name, ns), resource, name)
			return
		}
		if s, ok := f.secrets[ns+"/"+name]; ok {
			writeJSON(w, http.StatusOK, s)
			return
		}
	case r.Method == http.MethodPost && len(parts) == 4 && resource == "serviceaccounts" && parts[3] == "token":
		body, _ := io.ReadAll(r.Body)
		var tr authenticationv1.TokenRequest
		if err := json.Unmarshal(body, &tr); err != nil {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error(), "", "")
			return
		}
		f.tokenRequests = append(f.tokenRequests, tokenCall{Namespace: ns, Name: name, Req: tr})
		f.tokenSerial++
		ttl := f.tokenTTL
		if tr.Spec.ExpirationSeconds != nil {
			ttl = time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
		}
		tr.TypeMeta = metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"}
		tr.Status = authenticationv1.TokenRequestStatus{
			Token:               fmt.Sprintf("token-%s-%s-%d", ns, name, f.tokenSerial),
			ExpirationTimestamp: metav1.NewTime(f.clock.Now().Add(ttl)),
		}
		writeJSON(w, http.StatusCreated, &tr)
		return
	}
	writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("%s %q not found", resource, name), resource, name)
}

func writeJSON(w http.ResponseWriter, code int, obj any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg, kind, name string) {
	writeJSON(w, code, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  msg,
		Reason:   reason,
		Details:  &metav1.StatusDetails{Name: name, Kind: kind},
		Code:     int32(code),
	})
}

// testEnv is a Manager on a temporary root with a fake API server behind it.
type testEnv struct {
	root  string
	clock *testingclock.FakeClock
	api   *fakeAPIServer
	mgr   *Manager
	src   *ClientSource
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	requireRoot(t)
	root := t.TempDir()
	// Registered after TempDir, so it runs before the directory is removed.
	t.Cleanup(func() { assertNoMountsUnder(t, root) })
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC))
	api := newFakeAPIServer(t, clk)
	src, err := NewClientSource(api.client(t))
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{root: root, clock: clk, api: api, src: src}
	e.mgr = e.newManager(t)
	return e
}

// newManager is a Manager on the env's root, as a restarted agent builds it.
func (e *testEnv) newManager(t *testing.T) *Manager {
	t.Helper()
	m, err := New(Config{
		RootDir: e.root,
		Logger:  slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Objects: e.src,
		Tokens:  e.src,
		Clock:   e.clock,
		NodeAllocatable: v1.ResourceList{
			v1.ResourceCPU:    mustQuantity("4"),
			v1.ResourceMemory: mustQuantity("8Gi"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// assertNoMountsUnder unmounts whatever a failed test left under dir and
// fails the test if there was anything.
func assertNoMountsUnder(t *testing.T, dir string) {
	t.Helper()
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		t.Error(err)
		return
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		resolved = dir
	}
	left := mountinfo.Under(mounts, resolved)
	for _, m := range left {
		t.Errorf("still mounted after the test: %s (%s)", m.MountPoint, m.FSType)
		_ = unmount(m.MountPoint)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func mountsAt(t *testing.T, path string) []mountinfo.Mount {
	t.Helper()
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []mountinfo.Mount
	for _, m := range mounts {
		if m.MountPoint == path {
			out = append(out, m)
		}
	}
	return out
}

func testPod(uid string, volumes []v1.Volume, containers ...v1.Container) *v1.Pod {
	if len(containers) == 0 {
		containers = []v1.Container{{Name: "app", Image: "busybox"}}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "ns1", UID: types.UID(uid),
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": "a \"quoted\"\nvalue"},
		},
		Spec: v1.PodSpec{Volumes: volumes, Containers: containers, ServiceAccountName: "builder"},
	}
}

func ptr[T any](v T) *T { return &v }

func readVolumeFile(t *testing.T, path string) (string, os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), info.Mode()
}

var ctx = context.Background()

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
