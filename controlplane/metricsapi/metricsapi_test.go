package metricsapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

func TestSeriesUsage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pt := func(sec int, cpu, mem float64) point {
		return point{at: t0.Add(time.Duration(sec) * time.Second), cpu: cpu, memory: mem, hasCPU: true, hasMemory: true}
	}
	for _, c := range []struct {
		name    string
		started time.Time
		points  []point
		want    Usage
		ok      bool
	}{
		{name: "one point has no rate", points: []point{pt(0, 1, 10)}},
		{name: "half a core over 10s", points: []point{pt(0, 1, 10), pt(10, 6, 20)},
			want: Usage{Timestamp: t0.Add(10 * time.Second), Window: 10 * time.Second, NanoCores: 5e8, MemoryBytes: 20}, ok: true},
		{name: "a point not newer is ignored", points: []point{pt(0, 1, 10), pt(10, 6, 20), pt(10, 9, 30)},
			want: Usage{Timestamp: t0.Add(10 * time.Second), Window: 10 * time.Second, NanoCores: 5e8, MemoryBytes: 20}, ok: true},
		{name: "the last two points count", points: []point{pt(0, 1, 10), pt(10, 6, 20), pt(15, 8, 30)},
			want: Usage{Timestamp: t0.Add(15 * time.Second), Window: 5 * time.Second, NanoCores: 4e8, MemoryBytes: 30}, ok: true},
		{name: "a counter that went back has no rate", points: []point{pt(0, 5, 10), pt(10, 1, 20)}},
		{name: "started within the window", started: t0.Add(5 * time.Second), points: []point{pt(0, 1, 10), pt(10, 6, 20)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := series{started: c.started}
			for _, p := range c.points {
				s.add(p)
			}
			got, ok := s.usage()
			if ok != c.ok || got != c.want {
				t.Errorf("usage() = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// agent is a node agent's /metrics/resource as the kubelet writes it, its
// figures settable between scrapes.
type agent struct {
	mu   sync.Mutex
	body string
}

func (a *agent) set(at time.Time, nodeCPU, appCPU float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ms := at.UnixMilli()
	a.body = fmt.Sprintf(`# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} %g %d
container_cpu_usage_seconds_total{container="side",namespace="default",pod="web"} 1 %d
container_cpu_usage_seconds_total{container="db",namespace="prod",pod="db"} 2 %d
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 1.048576e+07 %d
container_memory_working_set_bytes{container="side",namespace="default",pod="web"} 1.048576e+06 %d
container_memory_working_set_bytes{container="db",namespace="prod",pod="db"} 3e+06 %d
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="app",namespace="default",pod="web"} 1.7e+09
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total %g %d
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 2.147483648e+09 %d
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
`, appCPU, ms, ms, ms, ms, ms, ms, nodeCPU, ms, ms)
}

func (a *agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics/resource" {
		http.NotFound(w, r)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(a.body))
}

func TestScrapeAndServeNodeAndPodMetrics(t *testing.T) {
	a := &agent{}
	srv := httptest.NewTLSServer(a)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"zone": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Labels: map[string]string{"zone": "b"}}}, // no address
	}
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "db", Labels: map[string]string{"app": "db"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "idle"}},
	}
	objects := Objects{
		Nodes: func(_ context.Context, sel labels.Selector) ([]corev1.Node, error) {
			var out []corev1.Node
			for _, n := range nodes {
				if sel.Matches(labels.Set(n.Labels)) {
					out = append(out, n)
				}
			}
			return out, nil
		},
		Pods: func(_ context.Context, ns string, sel labels.Selector) ([]corev1.Pod, error) {
			var out []corev1.Pod
			for _, p := range pods {
				if (ns == "" || p.Namespace == ns) && sel.Matches(labels.Set(p.Labels)) {
					out = append(out, p)
				}
			}
			return out, nil
		},
	}
	s, err := NewScraper(Config{
		Nodes:     func(ctx context.Context) ([]corev1.Node, error) { return objects.Nodes(ctx, labels.Everything()) },
		Address:   func(n *corev1.Node) string { return map[string]string{"node-a": addr}[n.Name] },
		Transport: srv.Client().Transport,
	})
	if err != nil {
		t.Fatal(err)
	}
	nodeREST, podREST := NewREST(s, objects)
	ctx := context.Background()

	t0 := time.Unix(1_800_000_000, 0)
	a.set(t0, 100, 10)
	s.ScrapeAll(ctx)
	if _, err := nodeREST.Get(ctx, "node-a", nil); !apierrors.IsNotFound(err) {
		t.Fatalf("after one scrape: %v, want NotFound (no rate yet)", err)
	}
	// 10 s later: the node used 15 more CPU-seconds, app 2.5.
	a.set(t0.Add(10*time.Second), 115, 12.5)
	s.ScrapeAll(ctx)

	obj, err := nodeREST.Get(ctx, "node-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	nm := obj.(*metricsv1beta1.NodeMetrics)
	if nm.Usage.Cpu().String() != "1500m" || nm.Usage.Memory().String() != "2Gi" || nm.Window.Duration != 10*time.Second ||
		!nm.Timestamp.Time.Equal(t0.Add(10*time.Second)) || nm.Labels["zone"] != "a" {
		t.Errorf("node-a metrics %+v", nm)
	}
	if _, err := nodeREST.Get(ctx, "node-b", nil); !apierrors.IsNotFound(err) {
		t.Errorf("node-b (unscraped): %v, want NotFound", err)
	}
	sel, _ := labels.Parse("zone=b")
	list, err := nodeREST.List(ctx, &metainternalversion.ListOptions{LabelSelector: sel})
	if err != nil || len(list.(*metricsv1beta1.NodeMetricsList).Items) != 0 {
		t.Errorf("zone=b nodes: %+v %v", list, err)
	}

	obj, err = podREST.Get(genericapirequest.WithNamespace(ctx, "default"), "web", nil)
	if err != nil {
		t.Fatal(err)
	}
	pm := obj.(*metricsv1beta1.PodMetrics)
	// side's counter stood still: 0 CPU, but it has a rate.
	if len(pm.Containers) != 2 || pm.Containers[0].Name != "app" || pm.Containers[0].Usage.Cpu().String() != "250m" ||
		pm.Containers[1].Usage.Cpu().IsZero() == false || pm.Labels["app"] != "web" {
		t.Errorf("web metrics %+v", pm)
	}
	all, err := podREST.List(genericapirequest.WithNamespace(ctx, ""), &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range all.(*metricsv1beta1.PodMetricsList).Items {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	if strings.Join(names, ",") != "default/web,prod/db" {
		t.Errorf("all pods with metrics: %v (prod/idle has no containers running)", names)
	}
	sel, _ = labels.Parse("app=db")
	prod, _ := podREST.List(genericapirequest.WithNamespace(ctx, "prod"), &metainternalversion.ListOptions{LabelSelector: sel})
	if items := prod.(*metricsv1beta1.PodMetricsList).Items; len(items) != 1 || items[0].Name != "db" {
		t.Errorf("prod app=db: %+v", items)
	}

	table, err := podREST.ConvertToTable(ctx, all, nil)
	if err != nil || len(table.Rows) != 2 || fmt.Sprint(table.Rows[0].Cells) != "[web 250m 11Mi 10s]" {
		t.Errorf("table %+v %v", table, err)
	}

	// A node gone from the list is forgotten.
	nodes = nodes[1:]
	s.ScrapeAll(ctx)
	if _, err := nodeREST.Get(ctx, "node-a", nil); !apierrors.IsNotFound(err) {
		t.Errorf("a deleted node's metrics: %v, want NotFound", err)
	}
}
