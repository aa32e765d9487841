package kubeletapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"berth/agent/kubeletapi"
	"berth/agent/stats"
	"berth/cri"
	"berth/cri/critest"
)

// withStats serves a stats provider sampling the harness's runtime and this
// machine's cgroups.
func withStats(t *testing.T, p **stats.Provider) harnessOption {
	return func(cfg *kubeletapi.Config) {
		var err error
		*p, err = stats.New(stats.Config{Runtime: cfg.Runtime.(*cri.Client), NodeName: cfg.NodeName, RootDir: cfg.RootDir, PodLogDir: cfg.PodLogDir})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Stats = *p
	}
}

func TestStatsSummaryAndMetricsPaths(t *testing.T) {
	var p *stats.Provider
	h := newHarness(t, withStats(t, &p))
	if code, body := h.get("/stats/summary"); code != http.StatusServiceUnavailable {
		t.Errorf("before the first sample: %d %q, want 503", code, body)
	}
	_, id := runPod(t, h, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"}}, 0)
	if err := h.rt.SetContainerUsage(id, critest.ContainerUsage{CPUCoreNanoSeconds: 7e9, WorkingSetBytes: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}

	code, body := h.get("/stats/summary")
	if code != http.StatusOK {
		t.Fatalf("GET /stats/summary = %d %q", code, body)
	}
	var s statsapi.Summary
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("decoding into the upstream Summary: %v", err)
	}
	if s.Node.NodeName != "node-a" || s.Node.CPU == nil || s.Node.CPU.UsageCoreNanoSeconds == nil || *s.Node.CPU.UsageCoreNanoSeconds == 0 {
		t.Errorf("node %+v: want this machine's CPU time", s.Node)
	}
	if len(s.Pods) != 1 || s.Pods[0].PodRef.Name != "web" || len(s.Pods[0].Containers) != 1 || *s.Pods[0].Containers[0].CPU.UsageCoreNanoSeconds != 7e9 {
		t.Fatalf("pods %+v", s.Pods)
	}

	_, body = h.get("/stats/summary?only_cpu_and_memory=true")
	s = statsapi.Summary{}
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if s.Node.Fs != nil || s.Node.Network != nil || s.Node.CPU == nil || len(s.Pods) != 1 || s.Pods[0].Containers[0].Memory == nil {
		t.Errorf("only_cpu_and_memory: %s", body)
	}
	if code, body := h.get("/stats/summary?only_cpu_and_memory=maybe"); code != http.StatusBadRequest || !strings.Contains(body, "only_cpu_and_memory") {
		t.Errorf("a bad only_cpu_and_memory: %d %q", code, body)
	}

	code, body = h.get("/metrics/resource")
	if code != http.StatusOK || !strings.Contains(body, `container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 7 `) {
		t.Errorf("GET /metrics/resource = %d\n%s", code, body)
	}
	code, body = h.get("/metrics/cadvisor")
	if code != http.StatusOK || !strings.Contains(body, `container_memory_working_set_bytes{container="app",id="",image="busybox:1",name="`+id+`",namespace="default",pod="web"} 5.24288e+06 `) {
		t.Errorf("GET /metrics/cadvisor = %d\n%s", code, body)
	}
	if code, _ := h.getAs(h.httpClient(), "/stats/summary"); code != http.StatusUnauthorized {
		t.Errorf("anonymous /stats/summary: %d, want 401", code)
	}
}

func TestStatsPathsWithoutAProviderAreNotFound(t *testing.T) {
	h := newHarness(t)
	for _, path := range []string{"/stats/summary", "/metrics/resource", "/metrics/cadvisor"} {
		if code, _ := h.get(path); code != http.StatusNotFound {
			t.Errorf("GET %s without Config.Stats: %d, want 404", path, code)
		}
	}
}

func TestProbeMetricsAreTheProbersSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	running := prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_running_pods", Help: "Number of pods that have a running pod sandbox"})
	probes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "prober_probe_total", Help: "Cumulative number of a liveness, readiness or startup probe for a container by result."}, []string{"probe_type", "result"})
	reg.MustRegister(running, probes)
	probes.WithLabelValues("Readiness", "successful").Add(3)
	h := newHarness(t, func(cfg *kubeletapi.Config) { cfg.Metrics = reg })
	code, body := h.get("/metrics/probes")
	if code != http.StatusOK || !strings.Contains(body, `prober_probe_total{probe_type="Readiness",result="successful"} 3`) || strings.Contains(body, "kubelet_running_pods") {
		t.Errorf("GET /metrics/probes = %d\n%s", code, body)
	}
	if code, body := h.get("/metrics"); code != http.StatusOK || !strings.Contains(body, "kubelet_running_pods") || !strings.Contains(body, "prober_probe_total") {
		t.Errorf("GET /metrics = %d\n%s", code, body)
	}
}
