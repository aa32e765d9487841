package podworker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/metrics"
	"berth/agent/pleg"
	"berth/agent/podruntime"
	"berth/agent/status"
	"berth/cri"
	"berth/cri/critest"
	"berth/internal/errdefs"
)

// newMetricsHarness is newHarness with the agent's metrics on a new
// registry: the CRI client carries the metrics' interceptor, as the agent
// wires it, and the manager records them.
func newMetricsHarness(t *testing.T, srv *critest.Server) (*harness, *metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	met, err := metrics.New(reg, "node1")
	if err != nil {
		t.Fatal(err)
	}
	client, err := cri.New(context.Background(), cri.Config{Endpoint: srv.Endpoint(), UnaryInterceptors: []grpc.UnaryClientInterceptor{met.RuntimeInterceptor()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	h := &harness{t: t, srv: srv, cri: client, status: status.NewManager(), root: t.TempDir(), logs: t.TempDir(),
		configure: func(c *Config) { c.Metrics = met }}
	h.start()
	return h, met, reg
}

// metricValue is the value of the series of name whose labels include
// labels (a counter's or gauge's value, a histogram's sample count), and
// whether the series exists.
func metricValue(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			return sampleValue(m), true
		}
	}
	return 0, false
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

func TestMetricsOfAStartedPod(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h, met, reg := newMetricsHarness(t, srv)
	pod := testPod("web", v1.RestartPolicyAlways, []string{"init"}, "app", "side")
	h.m.Update(pod)
	eventually(t, "init container running", func() (bool, string) { return h.running(pod.UID, "init") != nil, "" })
	if err := srv.ExitContainer(h.running(pod.UID, "init").GetId(), 0, "Completed"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod Running", func() (bool, string) {
		st := h.podStatus(pod.UID)
		return st.Phase == v1.PodRunning, string(st.Phase)
	})
	want := func(name string, labels map[string]string, value float64) {
		t.Helper()
		got, ok := metricValue(t, reg, name, labels)
		if !ok || got != value {
			t.Errorf("%s%v = %v (present %t), want %v", name, labels, got, ok, value)
		}
	}
	want("kubelet_started_pods_total", nil, 1)
	want("kubelet_started_containers_total", map[string]string{"container_type": "container"}, 2)
	want("kubelet_started_containers_total", map[string]string{"container_type": "init_container"}, 1)
	want("kubelet_pod_start_duration_seconds", nil, 1) // one observation: the pod started once
	want("kubelet_node_name", map[string]string{"node": "node1"}, 1)
	// Every CRI call is counted once, under the kubelet's operation names:
	// as many as the runtime served, and each with a duration.
	h.stop()
	if n, _ := metricValue(t, reg, "kubelet_pod_worker_duration_seconds", map[string]string{"operation": "create"}); n != 1 {
		t.Errorf("kubelet_pod_worker_duration_seconds{operation=create} has %v samples, want 1 (the first sync)", n)
	}
	for method, op := range map[string]string{
		"RunPodSandbox": "run_podsandbox", "CreateContainer": "create_container", "StartContainer": "start_container",
		"PodSandboxStatus": "podsandbox_status", "ListContainers": "list_containers", "ListPodSandbox": "list_podsandbox",
	} {
		served := float64(srv.Calls(method))
		if served == 0 {
			t.Fatalf("the runtime served no %s", method)
		}
		want("kubelet_runtime_operations_total", map[string]string{"operation_type": op}, served)
		want("kubelet_runtime_operations_duration_seconds", map[string]string{"operation_type": op}, served)
	}
	want("kubelet_runtime_operations_total", map[string]string{"operation_type": "run_podsandbox"}, 1)
	want("kubelet_runtime_operations_total", map[string]string{"operation_type": "start_container"}, 3)
	if _, ok := metricValue(t, reg, "kubelet_runtime_operations_errors_total", nil); ok {
		t.Error("kubelet_runtime_operations_errors_total has a series, but no call failed")
	}

	// The PLEG's relist counts the running pod and its containers.
	detector, err := pleg.New(pleg.Config{Cache: podruntime.NewCache(podruntime.New(h.cri)), Changed: func(types.UID) {}, Metrics: met})
	if err != nil {
		t.Fatal(err)
	}
	if err := detector.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	want("kubelet_running_pods", nil, 1)
	want("kubelet_running_containers", map[string]string{"container_state": "running"}, 2)
	want("kubelet_running_containers", map[string]string{"container_state": "exited"}, 1) // the init container
	want("kubelet_running_containers", map[string]string{"container_state": "created"}, 0)
	want("kubelet_pleg_relist_duration_seconds", nil, 1)
	want("kubelet_pleg_relist_interval_seconds", nil, 0) // no previous relist yet
	if err := detector.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	want("kubelet_pleg_relist_duration_seconds", nil, 2)
	want("kubelet_pleg_relist_interval_seconds", nil, 1)
}

func TestMetricsCountRuntimeErrors(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	srv.InjectN("RunPodSandbox", grpcstatus.Error(codes.Unavailable, "runtime busy"), 1)
	h, _, reg := newMetricsHarness(t, srv)
	pod := testPod("web", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	eventually(t, "pod Running after the failed sandbox", func() (bool, string) {
		st := h.podStatus(pod.UID)
		return st.Phase == v1.PodRunning, string(st.Phase)
	})
	h.stop()
	op := map[string]string{"operation_type": "run_podsandbox"}
	if got, _ := metricValue(t, reg, "kubelet_runtime_operations_errors_total", op); got != 1 {
		t.Errorf("kubelet_runtime_operations_errors_total{run_podsandbox} = %v, want 1", got)
	}
	if got, _ := metricValue(t, reg, "kubelet_runtime_operations_total", op); got != 2 {
		t.Errorf("kubelet_runtime_operations_total{run_podsandbox} = %v, want 2 (failed, then run)", got)
	}
	// Attempts are counted, as the kubelet counts them.
	if got, _ := metricValue(t, reg, "kubelet_started_pods_total", nil); got != 2 {
		t.Errorf("kubelet_started_pods_total = %v, want 2", got)
	}
	if got, ok := metricValue(t, reg, "kubelet_runtime_operations_errors_total", map[string]string{"operation_type": "start_container"}); ok {
		t.Errorf("kubelet_runtime_operations_errors_total{start_container} = %v, but no start failed", got)
	}
	if _, err := metrics.New(reg, "node1"); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Errorf("registering the metrics twice: %v, want ErrAlreadyExists", err)
	}
}

// A pod added again with the same UID while it terminates runs again once
// terminated, and counts in kubelet_restarted_pods_total by whether it is
// static.
func TestMetricsCountPodsRestartedWithTheSameUID(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h, _, reg := newMetricsHarness(t, srv)
	pod := testPod("again", v1.RestartPolicyAlways, nil, "app")
	pod.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	h.m.Update(pod)
	eventually(t, "reported Running", func() (bool, string) {
		st := h.podStatus(pod.UID)
		return st.Phase == v1.PodRunning && h.running(pod.UID, "app") != nil, string(st.Phase)
	})
	first := h.running(pod.UID, "app").GetId()

	release := make(chan struct{})
	arrived := srv.Delay("StopContainer", release)
	h.m.Remove(pod.UID)
	<-arrived // the termination is under way
	h.m.Update(pod)
	close(release)
	srv.Clear("StopContainer")
	eventually(t, "running again in a new container", func() (bool, string) {
		c := h.running(pod.UID, "app")
		return c != nil && c.GetId() != first, ""
	})
	eventually(t, "reported Running again", func() (bool, string) {
		st := h.podStatus(pod.UID)
		id := containerStatus(st, "app").ContainerID
		return st.Phase == v1.PodRunning && id != "" && !strings.HasSuffix(id, first), string(st.Phase) + " " + id
	})
	h.stop()
	if got, _ := metricValue(t, reg, "kubelet_restarted_pods_total", map[string]string{"static": "true"}); got != 1 {
		t.Errorf("kubelet_restarted_pods_total{static=true} = %v, want 1", got)
	}
	if got, ok := metricValue(t, reg, "kubelet_restarted_pods_total", map[string]string{"static": "false"}); ok {
		t.Errorf("kubelet_restarted_pods_total{static=false} = %v, want no series", got)
	}
	if got, _ := metricValue(t, reg, "kubelet_pod_worker_duration_seconds", map[string]string{"operation": "kill"}); got < 1 {
		t.Errorf("kubelet_pod_worker_duration_seconds{operation=kill} has %v samples, want the termination", got)
	}
	if got, _ := metricValue(t, reg, "kubelet_started_pods_total", nil); got != 2 {
		t.Errorf("kubelet_started_pods_total = %v, want 2", got)
	}
	if got, _ := metricValue(t, reg, "kubelet_pod_start_duration_seconds", nil); got != 2 {
		t.Errorf("kubelet_pod_start_duration_seconds has %v samples, want 2 (each run of the pod)", got)
	}
	if got, _ := metricValue(t, reg, "kubelet_pod_worker_duration_seconds", map[string]string{"operation": "create"}); got != 2 {
		t.Errorf("kubelet_pod_worker_duration_seconds{operation=create} has %v samples, want 2 (each run's first sync)", got)
	}
}

// histogramSum is the sample sum of the histogram name.
func histogramSum(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetHistogram().GetSampleSum()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

// The pod startup SLI leaves out the time the worker spent pulling the
// pod's images; with the images present nothing is left out.
func TestPodStartSLILeavesOutImagePulls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy v1.PullPolicy
		pulled bool
	}{
		{"pulled", v1.PullAlways, true},
		{"present", v1.PullIfNotPresent, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := critest.NewServer(t)
			srv.PreloadImage("busybox")
			h, met, reg := newMetricsHarness(t, srv)
			pod := testPod("web", v1.RestartPolicyAlways, nil, "app")
			pod.CreationTimestamp = metav1.Now()
			pod.Spec.Containers[0].ImagePullPolicy = tc.policy
			h.m.Update(pod) // as the watch delivers it: tracked
			eventually(t, "app running", func() (bool, string) {
				st := h.podStatus(pod.UID)
				return len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State.Running != nil, fmt.Sprintf("%+v", st)
			})
			observed := pod.DeepCopy()
			observed.Status = h.podStatus(pod.UID)
			met.PodStatusWritten(observed) // as statussync does once written
			h.m.Update(observed)           // and as the watch then delivers it
			if n, _ := metricValue(t, reg, "kubelet_pod_start_sli_duration_seconds", nil); n != 1 {
				t.Fatalf("SLI samples %v, want 1", n)
			}
			sli := histogramSum(t, reg, "kubelet_pod_start_sli_duration_seconds")
			total := histogramSum(t, reg, "kubelet_pod_start_total_duration_seconds")
			if pulls := srv.Calls("PullImage"); (pulls > 0) != tc.pulled {
				t.Fatalf("%d pulls, want pulled=%t", pulls, tc.pulled)
			}
			if tc.pulled && !(sli < total) || !tc.pulled && sli != total || sli <= 0 {
				t.Errorf("SLI %vs, total %vs: want the SLI below the total exactly when an image was pulled", sli, total)
			}
		})
	}
}
