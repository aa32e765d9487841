package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodsAndHealthz(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var unhealthy error
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_running_pods", Help: "test"}))
	s, err := New(Config{
		Metrics:  reg,
		Listener: lis,
		Pods: func() []v1.Pod {
			return []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default"}, Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.1.0.2"}}}
		},
		Healthy: func() error { return unhealthy },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	base := "http://" + lis.Addr().String()

	resp, err := http.Get(base + "/pods")
	if err != nil {
		t.Fatal(err)
	}
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 1 || list.Items[0].Status.PodIP != "10.1.0.2" {
		t.Fatalf("GET /pods = %+v", list)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok" {
		t.Fatalf("GET /healthz = %d %q", code, body)
	}
	unhealthy = errors.New("runtime down")
	if code, body := get("/healthz"); code != 500 || body != "runtime down\n" {
		t.Fatalf("unhealthy GET /healthz = %d %q", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "\nkubelet_running_pods 0\n") {
		t.Fatalf("GET /metrics = %d %q", code, body)
	}
	if code, _ := get("/nothing"); code != 404 {
		t.Fatalf("GET /nothing = %d", code)
	}
	resp, err = http.Post(base+"/pods", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /pods = %d, want 405 (read-only)", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}
