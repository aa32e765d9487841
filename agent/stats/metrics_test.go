package stats

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"berth/cri/critest"
)

// upstreamFamily is a metric as upstream exports it: its type and its label
// names (sorted).
type upstreamFamily struct {
	typ    dto.MetricType
	labels string
}

// The kubelet v1.34's /metrics/resource (pkg/kubelet/metrics/collectors/resource_metrics.go).
var upstreamResource = map[string]upstreamFamily{
	"node_cpu_usage_seconds_total":       {dto.MetricType_COUNTER, ""},
	"node_memory_working_set_bytes":      {dto.MetricType_GAUGE, ""},
	"node_swap_usage_bytes":              {dto.MetricType_GAUGE, ""},
	"container_cpu_usage_seconds_total":  {dto.MetricType_COUNTER, "container,namespace,pod"},
	"container_memory_working_set_bytes": {dto.MetricType_GAUGE, "container,namespace,pod"},
	"container_swap_usage_bytes":         {dto.MetricType_GAUGE, "container,namespace,pod"},
	"container_swap_limit_bytes":         {dto.MetricType_GAUGE, "container,namespace,pod"},
	"container_start_time_seconds":       {dto.MetricType_GAUGE, "container,namespace,pod"},
	"pod_cpu_usage_seconds_total":        {dto.MetricType_COUNTER, "namespace,pod"},
	"pod_memory_working_set_bytes":       {dto.MetricType_GAUGE, "namespace,pod"},
	"pod_swap_usage_bytes":               {dto.MetricType_GAUGE, "namespace,pod"},
	"scrape_error":                       {dto.MetricType_GAUGE, ""},
	"resource_scrape_error":              {dto.MetricType_GAUGE, ""},
}

// cAdvisor v0.52's container metrics (metrics/prometheus.go) with the
// kubelet's labels (pkg/kubelet/server: container, id, image, name,
// namespace, pod), for the metric sets the kubelet enables.
var upstreamCadvisor = func() map[string]upstreamFamily {
	const base = "container,id,image,name,namespace,pod"
	with := func(extra ...string) string {
		l := append(strings.Split(base, ","), extra...)
		slices.Sort(l)
		return strings.Join(l, ",")
	}
	c, g := dto.MetricType_COUNTER, dto.MetricType_GAUGE
	m := map[string]upstreamFamily{
		"container_scrape_error":                     {g, ""},
		"container_last_seen":                        {g, base},
		"container_start_time_seconds":               {g, base},
		"container_cpu_usage_seconds_total":          {c, with("cpu")},
		"container_cpu_user_seconds_total":           {c, base},
		"container_cpu_system_seconds_total":         {c, base},
		"container_memory_cache":                     {g, base},
		"container_memory_rss":                       {g, base},
		"container_memory_kernel_usage":              {g, base},
		"container_memory_mapped_file":               {g, base},
		"container_memory_swap":                      {g, base},
		"container_memory_failcnt":                   {c, base},
		"container_memory_usage_bytes":               {g, base},
		"container_memory_max_usage_bytes":           {g, base},
		"container_memory_working_set_bytes":         {g, base},
		"container_memory_total_active_file_bytes":   {g, base},
		"container_memory_total_inactive_file_bytes": {g, base},
		"container_memory_failures_total":            {c, with("failure_type", "scope")},
		"container_spec_memory_limit_bytes":          {g, base},
		"container_fs_usage_bytes":                   {g, with("device")},
		"container_fs_limit_bytes":                   {g, with("device")},
		"container_fs_inodes_total":                  {g, with("device")},
		"container_fs_inodes_free":                   {g, with("device")},
		"container_processes":                        {g, base},
		"container_threads":                          {g, base},
		"container_threads_max":                      {g, base},
	}
	for _, n := range []string{"receive_bytes", "receive_packets", "receive_packets_dropped", "receive_errors",
		"transmit_bytes", "transmit_packets", "transmit_packets_dropped", "transmit_errors"} {
		m["container_network_"+n+"_total"] = upstreamFamily{c, with("interface")}
	}
	return m
}()

// scrape serves c on a registry of its own and parses the text answer.
func scrape(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return fams
}

// checkFamilies checks every scraped series against upstream's names, types
// and label names, and that each of required has a series.
func checkFamilies(t *testing.T, fams map[string]*dto.MetricFamily, upstream map[string]upstreamFamily, required []string) {
	t.Helper()
	for name, f := range fams {
		want, ok := upstream[name]
		if !ok {
			t.Errorf("%s: not an upstream metric", name)
			continue
		}
		if f.GetType() != want.typ {
			t.Errorf("%s: type %s, upstream's %s", name, f.GetType(), want.typ)
		}
		for _, m := range f.GetMetric() {
			var names []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
			}
			slices.Sort(names)
			if got := strings.Join(names, ","); got != want.labels {
				t.Errorf("%s: labels {%s}, upstream's {%s}", name, got, want.labels)
			}
		}
	}
	for _, name := range required {
		if len(fams[name].GetMetric()) == 0 {
			t.Errorf("%s: no series", name)
		}
	}
}

// series finds the series of family name with the given label values.
func series(fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
next:
	for _, m := range fams[name].GetMetric() {
		for k, v := range labels {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
				continue next
			}
		}
		return m
	}
	return nil
}

func TestResourceMetricsMatchTheKubelets(t *testing.T) {
	e := newStatsEnv(t)
	if err := e.srv.SetContainerUsage(e.containerID, critest.ContainerUsage{CPUCoreNanoSeconds: 3e9, WorkingSetBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	c := NewResourceCollector(e.p)
	fams := scrape(t, c)
	if v := fams["resource_scrape_error"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("resource_scrape_error before the first sample: %v, want 1", v)
	}
	if err := e.p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	fams = scrape(t, c)
	checkFamilies(t, fams, upstreamResource, []string{"node_cpu_usage_seconds_total", "node_memory_working_set_bytes",
		"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_start_time_seconds",
		"pod_cpu_usage_seconds_total", "pod_memory_working_set_bytes", "scrape_error", "resource_scrape_error"})
	ctr := map[string]string{"container": "app", "pod": "web", "namespace": "ns"}
	if m := series(fams, "container_cpu_usage_seconds_total", ctr); m.GetCounter().GetValue() != 3 || m.GetTimestampMs() != e.now.UnixMilli() {
		t.Errorf("container_cpu_usage_seconds_total %v, want 3 at the sample's time", m)
	}
	if m := series(fams, "pod_memory_working_set_bytes", map[string]string{"pod": "web", "namespace": "ns"}); m.GetGauge().GetValue() != 200<<20 {
		t.Errorf("pod_memory_working_set_bytes %v", m)
	}
	if v := fams["resource_scrape_error"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Errorf("resource_scrape_error %v, want 0", v)
	}
}

func TestCadvisorMetricsMatchCadvisors(t *testing.T) {
	e := newStatsEnv(t)
	if err := e.srv.SetContainerUsage(e.containerID, critest.ContainerUsage{CPUCoreNanoSeconds: 3e9, WorkingSetBytes: 1 << 20, WritableLayerBytes: 8192, WritableLayerInodes: 2}); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, NewCadvisorCollector(e.p))
	checkFamilies(t, fams, upstreamCadvisor, []string{"container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
		"container_memory_rss", "container_network_receive_bytes_total", "container_fs_usage_bytes", "container_last_seen",
		"container_start_time_seconds", "container_memory_failures_total"})
	ctr := map[string]string{"container": "app", "pod": "web", "namespace": "ns", "name": e.containerID, "image": "busybox",
		"id": e.podCgroup + "/" + e.containerID}
	for name, want := range map[string]float64{
		"container_cpu_usage_seconds_total":  3,
		"container_memory_working_set_bytes": 1 << 20,
		"container_memory_rss":               120 << 20,
		"container_fs_usage_bytes":           8192,
	} {
		m := series(fams, name, ctr)
		if got := m.GetCounter().GetValue() + m.GetGauge().GetValue(); m == nil || got != want {
			t.Errorf("%s{container=app}: %v, want %v", name, m, want)
		}
	}
	if m := series(fams, "container_network_receive_bytes_total", map[string]string{"pod": "web", "container": "", "interface": "eth0"}); m.GetCounter().GetValue() != 1234 {
		t.Errorf("the pod's eth0 received bytes: %v", m)
	}
	if m := series(fams, "container_cpu_usage_seconds_total", map[string]string{"id": "/", "cpu": "total"}); m.GetCounter().GetValue() != 50 {
		t.Errorf("the node's root cgroup: %v", m)
	}
}
