package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/knftables"
)

// waitForMetric polls cond for up to 5 s.
func waitForMetric(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFor polls cond on the fake's table (under its lock) for up to 5 s.
func waitFor(t *testing.T, nft *knftables.Fake, what string, cond func(tb *knftables.FakeTable) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		nft.RLock()
		ok := cond(nft.Table)
		nft.RUnlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; table:\n%s", what, nft.Dump())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProxierFollowsChangesAndDeletesItsTable(t *testing.T) {
	ctx := context.Background()
	svc := service("web", nil)
	sl := slice("web", "http", 8080, ep{ip: "10.244.0.5"})
	client := fake.NewClientset(svc, sl)
	nft := knftables.NewFake(knftables.IPv4Family, "berth-test")
	reg := prometheus.NewRegistry()
	p, err := New(Config{Client: client, Table: "berth-test", NFT: nft, Registerer: reg, MinSyncInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()

	waitFor(t, nft, "the service's dispatch", func(tb *knftables.FakeTable) bool {
		return tb != nil && value(tb, serviceIPsMap, "10.96.0.10", "tcp", "80") != ""
	})
	sl.Endpoints = nil
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, nft, "the reject of a service without endpoints", func(tb *knftables.FakeTable) bool {
		return value(tb, noEndpointSvcs, "10.96.0.10", "tcp", "80") == "goto "+rejectChain && tb.Chains[chainName("service", "ns/web/tcp/http")] == nil
	})
	if n := testutil.CollectAndCount(reg, "kubeproxy_sync_proxy_rules_duration_seconds", "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
		"kubeproxy_sync_full_proxy_rules_duration_seconds", "kubeproxy_sync_partial_proxy_rules_duration_seconds"); n != 4 {
		t.Errorf("kube-proxy's sync metrics: %d series, want 4", n)
	}
	if v := testutil.ToFloat64(p.metrics.lastSync.WithLabelValues(ipFamily)); v < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last sync timestamp %v is not recent", v)
	}
	if v := testutil.ToFloat64(p.metrics.endpointChanges); v < 2 {
		t.Errorf("kubeproxy_sync_proxy_rules_endpoint_changes_total = %v, want the add and the update", v)
	}
	// The slice's change trigger time is the network programming latency's start.
	sl.Annotations = map[string]string{v1.EndpointsLastChangeTriggerTime: time.Now().Add(-3 * time.Second).Format(time.RFC3339Nano)}
	sl.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.6"}}}
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, nft, "the new endpoint", func(tb *knftables.FakeTable) bool {
		return slices.Equal(targets(tb, chainName("service", "ns/web/tcp/http")), []string{"10.244.0.6:8080"})
	})
	waitForMetric(t, "a network programming latency of 3 s or more", func() bool {
		m := &dto.Metric{}
		if err := p.metrics.programming.WithLabelValues(ipFamily).(prometheus.Histogram).Write(m); err != nil {
			t.Fatal(err)
		}
		return m.Histogram.GetSampleCount() == 1 && m.Histogram.GetSampleSum() >= 3
	})

	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	nft.RLock()
	defer nft.RUnlock()
	if nft.Table != nil {
		t.Errorf("the table is left after Run returned:\n%s", nft.Dump())
	}
}

// /healthz and /livez follow kube-proxy: healthy while starting and in sync,
// and while a change waits less than the timeout; 503 after.
func TestHealthz(t *testing.T) {
	now := time.Unix(1000, 0)
	p, err := New(Config{Client: fake.NewClientset(), NFT: knftables.NewFake(knftables.IPv4Family, "berth-test"), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	p.health = &health{now: func() time.Time { return now }, timeout: time.Minute}
	srv := httptest.NewServer(p.HealthHandler())
	defer srv.Close()
	check := func(path string, want int) map[string]any {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if resp.StatusCode != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s at %v: %d %s, want %d application/json", path, now, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
		return body
	}
	check("/healthz", http.StatusOK) // starting: nothing queued
	p.health.queued()
	now = now.Add(59 * time.Second)
	check("/livez", http.StatusOK) // queued, not late yet
	now = now.Add(2 * time.Second)
	if body := check("/healthz", http.StatusServiceUnavailable); body["nodeEligible"] != true {
		t.Errorf("/healthz body %v lacks nodeEligible", body)
	}
	if body := check("/livez", http.StatusServiceUnavailable); body["nodeEligible"] != nil {
		t.Errorf("/livez body %v has nodeEligible", body)
	}
	p.health.updated(now)
	check("/healthz", http.StatusOK)
	if v := testutil.ToFloat64(p.metrics.healthz.WithLabelValues("503")); v != 1 {
		t.Errorf("kubeproxy_proxy_healthz_total{code=503} = %v, want 1", v)
	}
}

// A LoadBalancer Service with externalTrafficPolicy Local gets its
// health-check node port: 200 with local endpoints, 503 without.
func TestHealthCheckNodePort(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int32(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	svc := service("web", func(s *v1.Service) {
		s.Spec.Type, s.Spec.Ports[0].NodePort = v1.ServiceTypeLoadBalancer, 30080
		s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, port
	})
	sl := slice("web", "http", 8080)
	sl.Endpoints = []discoveryv1.Endpoint{epOn("10.244.0.5", "here", true, true, false), epOn("10.244.1.5", "there", true, true, false)}
	client := fake.NewClientset(svc, sl)
	p, err := New(Config{Client: client, NFT: knftables.NewFake(knftables.IPv4Family, "berth-test"), NodeName: "here", MinSyncInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	get := func() (int, map[string]any) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	waitForMetric(t, "200 from the health-check node port", func() bool { code, _ := get(); return code == http.StatusOK })
	if _, body := get(); body["localEndpoints"] != 1.0 || body["serviceProxyHealthy"] != true ||
		body["service"].(map[string]any)["name"] != "web" {
		t.Errorf("health check body %v, want web with 1 local endpoint", body)
	}
	sl.Endpoints = sl.Endpoints[1:]
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForMetric(t, "503 without local endpoints", func() bool { code, _ := get(); return code == http.StatusServiceUnavailable })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code, _ := get(); code != 0 {
		t.Errorf("the health-check node port still answers %d after Run returned", code)
	}
}

// With KeepTableOnStop the table outlives Run, and the next Run resyncs it
// in place (a restart).
func TestProxierKeepsItsTableAcrossRestarts(t *testing.T) {
	client := fake.NewClientset(service("web", nil), slice("web", "http", 8080, ep{ip: "10.244.0.5"}))
	nft := knftables.NewFake(knftables.IPv4Family, "berth-test")
	for run := range 2 {
		p, err := New(Config{Client: client, Table: "berth-test", NFT: nft, KeepTableOnStop: true, MinSyncInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		waitFor(t, nft, "the service's dispatch", func(tb *knftables.FakeTable) bool {
			return tb != nil && value(tb, serviceIPsMap, "10.96.0.10", "tcp", "80") != ""
		})
		waitForMetric(t, "this run's first sync", func() bool { return testutil.ToFloat64(p.metrics.lastSync.WithLabelValues(ipFamily)) > 0 })
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		nft.RLock()
		kept := nft.Table != nil && value(nft.Table, serviceIPsMap, "10.96.0.10", "tcp", "80") != ""
		nft.RUnlock()
		if !kept {
			t.Fatalf("run %d: the table is gone after Run returned", run)
		}
	}
}
