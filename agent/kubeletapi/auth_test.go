package kubeletapi_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"berth/agent/kubeletapi"
	"berth/internal/errdefs"
	"berth/internal/testpki"
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
	other := testpki.NewCA(t, "other-ca")
	c := h.httpClient(other.Client(t, "admin", "system:masters"))
	// The server names its CAs in the handshake, so the client withholds a
	// certificate they did not sign and the request arrives anonymous.
	if code, body := h.getAs(c, "/pods"); code != http.StatusUnauthorized {
		t.Fatalf("GET /pods with a certificate from an unknown CA = %d %q, want 401", code, body)
	}
	// Presented anyway, it fails the handshake.
	forced := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: h.serverCAs, ServerName: "node-a",
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert := other.Client(t, "admin", "system:masters")
			return &cert, nil
		},
	}}}
	if resp, err := forced.Get(h.url + "/pods"); err == nil {
		resp.Body.Close()
		t.Fatalf("GET /pods forcing a certificate from an unknown CA = %d, want the handshake refused", resp.StatusCode)
	}
}

func TestAuthorizerSeesTheKubeletsAttributes(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	h := newHarness(t, func(cfg *kubeletapi.Config) {
		cfg.Authorizer = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			mu.Lock()
			defer mu.Unlock()
			u := a.GetUser()
			seen = append(seen, strings.Join([]string{u.GetName(), strings.Join(u.GetGroups(), ","), a.GetVerb(),
				a.GetResource() + "/" + a.GetSubresource(), a.GetName(), a.GetAPIVersion(), a.GetPath()}, "|"))
			if u.GetName() == "system:kube-apiserver" || a.GetSubresource() == "healthz" {
				return authorizer.DecisionAllow, "", nil
			}
			return authorizer.DecisionNoOpinion, "", nil
		})
	})
	apiserver := h.httpClient(h.ca.Client(t, "system:kube-apiserver", "system:masters"))
	if code, body := h.getAs(apiserver, "/pods"); code != http.StatusOK {
		t.Fatalf("apiserver GET /pods = %d %q", code, body)
	}
	bob := h.httpClient(h.ca.Client(t, "bob", "dev"))
	if code, body := h.getAs(bob, "/healthz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("bob GET /healthz = %d %q, want 200 ok", code, body)
	}
	for path, want := range map[string]string{
		"/containerLogs/default/web/app": "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[proxy])",
		"/pods":                          "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])",
		"/logs/":                         "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[log])",
		"/metrics/resource":              "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[metrics])",
		"/stats/summary":                 "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[stats])",
		"/podsx":                         "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[proxy])",
	} {
		if code, body := h.getAs(bob, path); code != http.StatusForbidden || strings.TrimSpace(body) != want {
			t.Errorf("bob GET %s = %d %q, want 403 %q", path, code, body, want)
		}
	}
	mu.Lock()
	seen = nil
	mu.Unlock()
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
	want := "bob|dev,system:authenticated|create|nodes/proxy|node-a|v1|/exec/default/web/app"
	if len(seen) != 1 || seen[0] != want {
		t.Fatalf("POST /exec authorized as %q, want %q", seen, want)
	}
}

func TestAuthorizerErrorIs500(t *testing.T) {
	h := newHarness(t, func(cfg *kubeletapi.Config) {
		cfg.Authorizer = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionNoOpinion, "", errors.New("apiserver unreachable")
		})
	})
	code, body := h.get("/containerLogs/default/web/app")
	want := "Authorization error (user=admin, verb=get, resource=nodes, subresource=proxy)"
	if code != http.StatusInternalServerError || strings.TrimSpace(body) != want {
		t.Fatalf("GET with a failing authorizer = %d %q, want 500 %q", code, body, want)
	}
}

// TestTokenReviewAndSubjectAccessReview runs the agent API against an
// apiserver answering TokenReviews and SubjectAccessReviews: bearer tokens
// and client certificates are authenticated, every request is decided by a
// review on nodes/node-a, and both answers are cached (allowed and refused).
func TestTokenReviewAndSubjectAccessReview(t *testing.T) {
	rs := newReviewServer(t)
	rs.tokens["sa-token"] = authenticationv1.UserInfo{Username: "system:serviceaccount:default:reader", Groups: []string{"system:serviceaccounts"}}
	rs.tokens["plain-token"] = authenticationv1.UserInfo{Username: "plain"}
	rs.tokens["broken-token"] = authenticationv1.UserInfo{Username: "broken"}
	rs.allowed["system:serviceaccount:default:reader|get|proxy"] = true
	rs.allowed["kube-apiserver-kubelet-client|get|pods"] = true
	rs.broken["broken"] = true
	client := rs.client(t)
	h := newHarness(t, func(cfg *kubeletapi.Config) {
		authz, err := kubeletapi.WebhookAuthorizer(client.AuthorizationV1())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Authorizer, cfg.TokenReviews = authz, client.AuthenticationV1()
	})
	anon := h.httpClient()

	// A reviewed token, allowed nodes/proxy: /healthz is tried as
	// nodes/healthz, then nodes/proxy.
	for range 2 {
		if code, body := h.getWithToken(anon, "/healthz", "sa-token"); code != http.StatusOK || body != "ok" {
			t.Fatalf("GET /healthz with an allowed token = %d %q", code, body)
		}
	}
	if got, want := rs.sarsSince(0), []string{
		"system:serviceaccount:default:reader|system:serviceaccounts,system:authenticated|get|nodes/healthz|node-a|v1",
		"system:serviceaccount:default:reader|system:serviceaccounts,system:authenticated|get|nodes/proxy|node-a|v1",
	}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("SubjectAccessReviews:\n%s\nwant (the second request answered from the caches)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tokens, _ := rs.counts(); tokens != 1 {
		t.Fatalf("%d TokenReviews for two requests with one token, want 1 (cached)", tokens)
	}

	// A token the apiserver does not know: 401.
	if code, body := h.getWithToken(anon, "/healthz", "unknown-token"); code != http.StatusUnauthorized {
		t.Fatalf("GET /healthz with an unknown token = %d %q, want 401", code, body)
	}

	// A user without rights: 403, and the refusal is cached.
	_, before := rs.counts()
	for range 2 {
		code, body := h.getWithToken(anon, "/containerLogs/default/web/app", "plain-token")
		if want := "Forbidden (user=plain, verb=get, resource=nodes, subresource(s)=[proxy])"; code != http.StatusForbidden || strings.TrimSpace(body) != want {
			t.Fatalf("plain user GET /containerLogs = %d %q, want 403 %q", code, body, want)
		}
	}
	if _, after := rs.counts(); after != before+1 {
		t.Fatalf("%d SubjectAccessReviews for two refused requests, want 1 (cached)", after-before)
	}

	// A client certificate is reviewed under its common name.
	apiserver := h.httpClient(h.ca.Client(t, "kube-apiserver-kubelet-client"))
	_, before = rs.counts()
	if code, body := h.getAs(apiserver, "/pods"); code != http.StatusOK {
		t.Fatalf("apiserver GET /pods = %d %q", code, body)
	}
	if got := rs.sarsSince(before); len(got) != 1 || got[0] != "kube-apiserver-kubelet-client|system:authenticated|get|nodes/pods|node-a|v1" {
		t.Fatalf("SubjectAccessReviews for the apiserver's certificate: %q", got)
	}

	// A review that fails: 500.
	if code, body := h.getWithToken(anon, "/logs/", "broken-token"); code != http.StatusInternalServerError ||
		!strings.HasPrefix(body, "Authorization error (user=broken, verb=get, resource=nodes, subresource=log)") {
		t.Fatalf("GET with a failing SubjectAccessReview = %d %q, want 500", code, body)
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
		RootCAs: first, ServerName: "node-a", Certificates: []tls.Certificate{h2.ca.Client(t, "admin")},
	}}}
	if code, body := h2.getAs(c, "/healthz"); code != http.StatusOK {
		t.Fatalf("GET /healthz on the restarted server = %d %q", code, body)
	}
}

func TestConfigValidation(t *testing.T) {
	base := func() kubeletapi.Config {
		return kubeletapi.Config{
			Pods: func() []v1.Pod { return nil }, Locator: kubeletapi.CRILocator{}, Runtime: nil,
			ClientCAFile: "/x/ca.crt", RootDir: t.TempDir(), NodeName: "node-a",
			Authorizer: authorizer.AuthorizerFunc(allowAll),
		}
	}
	for name, tc := range map[string]struct {
		mutate func(*kubeletapi.Config)
		field  string
	}{
		"no node name":     {func(c *kubeletapi.Config) { c.NodeName = "" }, "Config.NodeName"},
		"no authorizer":    {func(c *kubeletapi.Config) { c.Authorizer = nil }, "Config.Authorizer"},
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
