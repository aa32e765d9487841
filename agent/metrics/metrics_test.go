package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	"berth/internal/errdefs"
)

func TestOperationTypeIsTheKubeletName(t *testing.T) {
	for method, want := range map[string]string{
		"/runtime.v1.RuntimeService/RunPodSandbox":            "run_podsandbox",
		"/runtime.v1.RuntimeService/PodSandboxStatus":         "podsandbox_status",
		"/runtime.v1.RuntimeService/ListPodSandboxStats":      "list_podsandbox_stats",
		"/runtime.v1.RuntimeService/CreateContainer":          "create_container",
		"/runtime.v1.RuntimeService/ExecSync":                 "exec_sync",
		"/runtime.v1.RuntimeService/UpdateContainerResources": "update_container",
		"/runtime.v1.RuntimeService/Version":                  "version",
		"/runtime.v1.ImageService/PullImage":                  "pull_image",
		"/runtime.v1.ImageService/ImageFsInfo":                "image_fs_info",
	} {
		if got := OperationType(method); got != want {
			t.Errorf("OperationType(%q) = %q, want %q", method, got, want)
		}
	}
}

func TestRuntimeInterceptorCountsCallsAndErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, "node1")
	if err != nil {
		t.Fatal(err)
	}
	ic := m.RuntimeInterceptor()
	fail := errors.New("boom")
	call := func(method string, err error) error {
		return ic(context.Background(), method, nil, nil, nil, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return err })
	}
	if err := call("/runtime.v1.RuntimeService/StartContainer", nil); err != nil {
		t.Fatal(err)
	}
	if err := call("/runtime.v1.RuntimeService/StartContainer", fail); !errors.Is(err, fail) {
		t.Fatalf("the interceptor returned %v, want the call's error", err)
	}
	if got := testutil.ToFloat64(m.runtimeOps.WithLabelValues("start_container")); got != 2 {
		t.Errorf("kubelet_runtime_operations_total{start_container} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.runtimeOpErrors.WithLabelValues("start_container")); got != 1 {
		t.Errorf("kubelet_runtime_operations_errors_total{start_container} = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.runtimeOpDuration); n != 1 {
		t.Errorf("kubelet_runtime_operations_duration_seconds has %d series, want 1", n)
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.PodStarted()
	m.PodRestarted(true)
	m.ContainerStarted(ContainerTypeContainer)
	m.PodRunning(time.Second)
	m.PodWorkerDone(OperationSync, time.Second)
	m.Relisted(time.Now(), time.Second, 1, nil)
	called := false
	err := m.RuntimeInterceptor()(context.Background(), "/runtime.v1.RuntimeService/Version", nil, nil, nil,
		func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			called = true
			return nil
		})
	if err != nil || !called {
		t.Fatalf("a nil Metrics' interceptor: err %v, call made %t", err, called)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(nil, "node1"); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("New(nil) = %v, want ErrInvalidArgument", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := New(reg, "node1"); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg, "node1"); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Errorf("New twice on one registry = %v, want ErrAlreadyExists", err)
	}
}

func TestRelistedRecordsIntervalsAndRunningCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, "node1")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1000, 0)
	m.Relisted(start, 20*time.Millisecond, 3, map[string]int{"running": 4, "exited": 1})
	m.Relisted(start.Add(time.Second), 10*time.Millisecond, 2, map[string]int{"running": 2})
	if got := testutil.ToFloat64(m.runningPods); got != 2 {
		t.Errorf("kubelet_running_pods = %v, want 2 (the last relist)", got)
	}
	for state, want := range map[string]float64{"running": 2, "exited": 0, "created": 0, "unknown": 0} {
		if got := testutil.ToFloat64(m.runningContainers.WithLabelValues(state)); got != want {
			t.Errorf("kubelet_running_containers{%s} = %v, want %v", state, got, want)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_pleg_relist_interval_seconds Interval in seconds between relists in the PLEG.
# TYPE kubelet_pleg_relist_interval_seconds histogram
kubelet_pleg_relist_interval_seconds_bucket{le="0.005"} 0
kubelet_pleg_relist_interval_seconds_bucket{le="0.01"} 0
kubelet_pleg_relist_interval_seconds_bucket{le="0.025"} 0
kubelet_pleg_relist_interval_seconds_bucket{le="0.05"} 0
kubelet_pleg_relist_interval_seconds_bucket{le="0.1"} 0
kubelet_pleg_relist_interval_seconds_bucket{le="0.25"} 0
kubelet_pleg_relist_interval_seconds_bucket{le="0.5"} 0
kubelet_pleg_relist_interval_seconds_bucket{le="1"} 1
kubelet_pleg_relist_interval_seconds_bucket{le="2.5"} 1
kubelet_pleg_relist_interval_seconds_bucket{le="5"} 1
kubelet_pleg_relist_interval_seconds_bucket{le="10"} 1
kubelet_pleg_relist_interval_seconds_bucket{le="+Inf"} 1
kubelet_pleg_relist_interval_seconds_sum 1
kubelet_pleg_relist_interval_seconds_count 1
`), "kubelet_pleg_relist_interval_seconds"); err != nil {
		t.Error(err)
	}
}
