package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/knftables"
)

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
		return value(tb, noEndpointSvcs, "10.96.0.10", "tcp", "80") == "goto "+rejectChain && len(chainsWith(tb, "endpoint-")) == 0
	})
	if n := testutil.CollectAndCount(reg, "kubeproxy_sync_proxy_rules_duration_seconds", "kubeproxy_sync_proxy_rules_last_timestamp_seconds"); n != 2 {
		t.Errorf("kube-proxy's sync metrics: %d series, want 2", n)
	}
	if v := testutil.ToFloat64(p.lastSync); v < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last sync timestamp %v is not recent", v)
	}

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
