package kubeletapi_test

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/agent/kubeletapi"
	"berth/internal/errdefs"
)

func TestAnonymousRequestsAreUnauthorized(t *testing.T) {
	h := newHarness(t)
	anon := h.httpClient()
	for _, path := range []string{
		"/healthz", "/pods", "/metrics",
		"/containerLogs/default/web/app",
		"/exec/default/web/app?command=ls&output=1",
		"/attach/default/web/app?output=1",
		"/portForward/default/web",
	} {
		code, body := h.getAs(anon, path)
		if code != http.StatusUnauthorized || strings.TrimSpace(body) != "Unauthorized" {
			t.Errorf("anonymous GET %s = %d %q, want 401 Unauthorized", path, code, body)
		}
	}
}

func TestCertificateFromAnotherCAIsRefused(t *testing.T) {
	h := newHarness(t)
	other := newTestCA(t, "other-ca")
	c := h.httpClient(other.client(t, "admin", "system:masters"))
	// The server names its CAs in the handshake, so the client withholds a
	// certificate they did not sign and the request arrives anonymous.
	if code, body := h.getAs(c, "/pods"); code != http.StatusUnauthorized {
		t.Fatalf("GET /pods with a certificate from an unknown CA = %d %q, want 401", code, body)
	}
	// Presented anyway, it fails the handshake.
	forced := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: h.serverCAs, ServerName: "node-a",
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert := other.client(t, "admin", "system:masters")
			return &cert, nil
		},
	}}}
	if resp, err := forced.Get(h.url + "/pods"); err == nil {
		resp.Body.Close()
		t.Fatalf("GET /pods forcing a certificate from an unknown CA = %d, want the handshake refused", resp.StatusCode)
	}
}

func TestAuthorizeHookSeesUserVerbAndPath(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	h := newHarness(t, func(cfg *kubeletapi.Config) {
		cfg.Authorize = func(u kubeletapi.User, verb, path string) bool {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, u.Name+"|"+strings.Join(u.Groups, ",")+"|"+verb+"|"+path)
			return u.Name == "system:kube-apiserver" || path == "/healthz"
		}
	})
	apiserver := h.httpClient(h.ca.client(t, "system:kube-apiserver", "system:masters"))
	if code, body := h.getAs(apiserver, "/pods"); code != http.StatusOK {
		t.Fatalf("apiserver GET /pods = %d %q", code, body)
	}
	bob := h.httpClient(h.ca.client(t, "bob", "dev"))
	if code, body := h.getAs(bob, "/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("bob GET /healthz = %d %q, want 200 ok", code, body)
	}
	code, body := h.getAs(bob, "/containerLogs/default/web/app")
	want := "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[proxy])"
	if code != http.StatusForbidden || strings.TrimSpace(body) != want {
		t.Fatalf("bob GET /containerLogs = %d %q, want 403 %q", code, body, want)
	}
	resp, err := bob.Post(h.url+"/exec/default/web/app?command=ls&output=1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("bob POST /exec = %d, want 403", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	wantSeen := []string{
		"system:kube-apiserver|system:masters|get|/pods",
		"bob|dev|get|/healthz",
		"bob|dev|get|/containerLogs/default/web/app",
		"bob|dev|create|/exec/default/web/app",
	}
	if strings.Join(seen, "\n") != strings.Join(wantSeen, "\n") {
		t.Fatalf("Authorize saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(wantSeen, "\n"))
	}
}

func TestPodsHealthzAndMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_running_pods", Help: "Number of pods that have a running pod sandbox"})
	reg.MustRegister(g)
	g.Set(2)
	var unhealthy error
	var mu sync.Mutex
	h := newHarness(t, func(cfg *kubeletapi.Config) {
		cfg.Metrics = reg
		cfg.Healthy = func() error { mu.Lock(); defer mu.Unlock(); return unhealthy }
	})
	h.setPods(
		v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", UID: "u1"}, Status: v1.PodStatus{Phase: v1.PodRunning}},
		v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "b", UID: "u2"}},
	)
	code, body := h.get("/pods")
	if code != http.StatusOK {
		t.Fatalf("GET /pods = %d %q", code, body)
	}
	var list v1.PodList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 2 ||
		list.Items[0].Name != "a" || list.Items[0].Status.Phase != v1.PodRunning || list.Items[1].Namespace != "kube-system" {
		t.Fatalf("GET /pods = %s", body)
	}
	if code, body := h.get("/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("GET /healthz = %d %q", code, body)
	}
	mu.Lock()
	unhealthy = errSyncLoop
	mu.Unlock()
	if code, body := h.get("/healthz"); code != http.StatusInternalServerError || !strings.Contains(body, "sync loop stalled") {
		t.Fatalf("unhealthy GET /healthz = %d %q", code, body)
	}
	code, body = h.get("/metrics")
	if code != http.StatusOK || !strings.Contains(body, "kubelet_running_pods 2") {
		t.Fatalf("GET /metrics = %d %q", code, body)
	}
}

type constErr string

func (e constErr) Error() string { return string(e) }

const errSyncLoop = constErr("sync loop stalled")

func TestServingCertificateIsReusedAcrossRestarts(t *testing.T) {
	h := newHarness(t)
	first := h.serverCAs
	// A second server on the same root dir serves the same certificate: the
	// first one's pool verifies it.
	h2 := newHarness(t, func(cfg *kubeletapi.Config) { cfg.RootDir = h.rootDir })
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: first, ServerName: "node-a", Certificates: []tls.Certificate{h2.ca.client(t, "admin")},
	}}}
	if code, body := h2.getAs(c, "/healthz"); code != http.StatusOK {
		t.Fatalf("GET /healthz on the restarted server = %d %q", code, body)
	}
}

func TestConfigValidation(t *testing.T) {
	base := func() kubeletapi.Config {
		return kubeletapi.Config{
			Pods: func() []v1.Pod { return nil }, Locator: kubeletapi.CRILocator{}, Runtime: nil,
			ClientCAFile: "/x/ca.crt", RootDir: t.TempDir(),
		}
	}
	for name, tc := range map[string]struct {
		mutate func(*kubeletapi.Config)
		field  string
	}{
		"no pods":          {func(c *kubeletapi.Config) { c.Pods = nil }, "Config.Pods"},
		"no locator":       {func(c *kubeletapi.Config) { c.Locator = nil }, "Config.Locator"},
		"no runtime":       {func(c *kubeletapi.Config) {}, "Config.Runtime"},
		"no client CA":     {func(c *kubeletapi.Config) { c.ClientCAFile = "" }, "Config.ClientCAFile"},
		"cert without key": {func(c *kubeletapi.Config) { c.CertFile = "/x/tls.crt" }, "Config.CertFile and Config.KeyFile"},
		"no root dir":      {func(c *kubeletapi.Config) { c.RootDir = "" }, "Config.RootDir"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := base()
			if name != "no runtime" {
				cfg.Runtime = newHarnessRuntime(t)
			}
			tc.mutate(&cfg)
			_, err := kubeletapi.New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.field) || !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("New = %v, want an invalid-argument error naming %s", err, tc.field)
			}
		})
	}
}
