// Package metrics defines the agent's Prometheus metrics, under the names,
// labels and buckets the kubelet uses (pkg/kubelet/metrics), registered on
// a Registerer the composition root passes in. Each metric is recorded
// where its event happens: the pod worker (pod starts, sync durations,
// started containers, image pulls), the PLEG (relist timings, running pods
// and containers), the CRI client interceptor (runtime operations) and,
// for the pod startup SLI (startup.go), the pod worker (pods as the watch
// delivers them) and the status writer. A nil *Metrics records nothing, so
// components may run without metrics.
package metrics

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// Container types of kubelet_started_containers_total, as the kubelet.
const (
	ContainerTypeContainer     = "container"
	ContainerTypeInitContainer = "init_container"
	// ContainerTypeEphemeralContainer: an ephemeral (debug) container.
	ContainerTypeEphemeralContainer = "ephemeral_container"
)

// Operations of kubelet_pod_worker_duration_seconds, as the kubelet's
// update types.
const (
	OperationCreate = "create"
	OperationSync   = "sync"
	OperationKill   = "kill"
)

// Container states of kubelet_running_containers, as the kubelet.
var ContainerStates = []string{"created", "running", "exited", "unknown"}

// podStartBuckets are the kubelet's pod startup buckets, in seconds.
var podStartBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// Metrics are the agent's metrics.
type Metrics struct {
	runningPods       prometheus.Gauge
	runningContainers *prometheus.GaugeVec
	podStartDuration  prometheus.Histogram
	// podStartSLIDuration and podStartTotalDuration are measured by startup.
	podStartSLIDuration   prometheus.Histogram
	podStartTotalDuration prometheus.Histogram
	startup               *startupTracker
	podWorkerDuration     *prometheus.HistogramVec
	runtimeOps            *prometheus.CounterVec
	runtimeOpErrors       *prometheus.CounterVec
	runtimeOpDuration     *prometheus.HistogramVec
	relistDuration        prometheus.Histogram
	relistInterval        prometheus.Histogram
	startedContainers     *prometheus.CounterVec
	startedPods           prometheus.Counter
	restartedPods         *prometheus.CounterVec
	nodeName              *prometheus.GaugeVec
	lastRelistStart       time.Time // of the previous relist
}

// New registers the agent's metrics on reg (required) and sets
// kubelet_node_name{node=nodeName} to 1.
func New(reg prometheus.Registerer, nodeName string) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("metrics: Registerer is required: %w", errdefs.ErrInvalidArgument)
	}
	m := &Metrics{
		runningPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubelet_running_pods", Help: "Number of pods that have a running pod sandbox.",
		}),
		runningContainers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubelet_running_containers", Help: "Number of containers currently running, by state.",
		}, []string{"container_state"}),
		podStartDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pod_start_duration_seconds", Help: "Duration in seconds from the agent seeing a pod for the first time to the pod starting to run.",
			Buckets: podStartBuckets,
		}),
		podStartSLIDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pod_start_sli_duration_seconds",
			Help:    "Duration in seconds to start a pod, excluding time to pull images, measured from pod creation timestamp to when all its containers are reported as started and observed via watch.",
			Buckets: podStartBuckets,
		}),
		podStartTotalDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pod_start_total_duration_seconds",
			Help:    "Duration in seconds to start a pod since creation, including time to pull images, measured to when all its containers are reported as started and observed via watch.",
			Buckets: podStartBuckets,
		}),
		startup: newStartupTracker(clock.RealClock{}),
		podWorkerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubelet_pod_worker_duration_seconds", Help: "Duration in seconds to sync a single pod, by operation (create, sync, kill).",
			Buckets: prometheus.DefBuckets,
		}, []string{"operation"}),
		runtimeOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_runtime_operations_total", Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		runtimeOpErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_runtime_operations_errors_total", Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
		runtimeOpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubelet_runtime_operations_duration_seconds", Help: "Duration in seconds of runtime operations, by operation type.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
		}, []string{"operation_type"}),
		relistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pleg_relist_duration_seconds", Help: "Duration in seconds for relisting pods in the PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		relistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubelet_pleg_relist_interval_seconds", Help: "Interval in seconds between relists in the PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		startedContainers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_started_containers_total", Help: "Cumulative number of containers started, by container type.",
		}, []string{"container_type"}),
		startedPods: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubelet_started_pods_total", Help: "Cumulative number of pods started (pod sandboxes run).",
		}),
		restartedPods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_restarted_pods_total", Help: "Number of pods restarted because they were removed and added again with the same UID while the agent terminated them (common for static pods), by whether the pod is static.",
		}, []string{"static"}),
		nodeName: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubelet_node_name", Help: "The node's name. The count is always 1.",
		}, []string{"node"}),
	}
	for _, c := range []prometheus.Collector{
		m.runningPods, m.runningContainers, m.podStartDuration, m.podStartSLIDuration, m.podStartTotalDuration, m.podWorkerDuration,
		m.runtimeOps, m.runtimeOpErrors, m.runtimeOpDuration, m.relistDuration, m.relistInterval,
		m.startedContainers, m.startedPods, m.restartedPods, m.nodeName,
	} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("metrics: %v: %w", err, errdefs.ErrAlreadyExists)
			}
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	for _, s := range ContainerStates {
		m.runningContainers.WithLabelValues(s).Set(0)
	}
	m.nodeName.WithLabelValues(nodeName).Set(1)
	return m, nil
}

// PodStarted counts a pod sandbox being run (kubelet_started_pods_total).
func (m *Metrics) PodStarted() {
	if m != nil {
		m.startedPods.Inc()
	}
}

// PodRestarted counts a pod added again with the same UID while it was
// being terminated, run again once terminated; static is whether it is a
// static pod (not from the apiserver).
func (m *Metrics) PodRestarted(static bool) {
	if m != nil {
		m.restartedPods.WithLabelValues(strconv.FormatBool(static)).Inc()
	}
}

// ContainerStarted counts a container being started, of containerType
// (ContainerTypeContainer, ContainerTypeInitContainer or
// ContainerTypeEphemeralContainer).
func (m *Metrics) ContainerStarted(containerType string) {
	if m != nil {
		m.startedContainers.WithLabelValues(containerType).Inc()
	}
}

// PodRunning observes the time from the agent first seeing a pod to all its
// containers running (kubelet_pod_start_duration_seconds); once per pod.
func (m *Metrics) PodRunning(sinceFirstSeen time.Duration) {
	if m != nil {
		m.podStartDuration.Observe(sinceFirstSeen.Seconds())
	}
}

// PodWorkerDone observes one pod sync of operation (OperationCreate,
// OperationSync or OperationKill) that took d.
func (m *Metrics) PodWorkerDone(operation string, d time.Duration) {
	if m != nil {
		m.podWorkerDuration.WithLabelValues(operation).Observe(d.Seconds())
	}
}

// Relisted records one PLEG relist that started at start and took d (and
// the interval since the previous one started), and
// the number of pods with a ready sandbox and of containers per state
// (keys of ContainerStates) it found. Relists are serial; it is not safe
// for concurrent use.
func (m *Metrics) Relisted(start time.Time, d time.Duration, runningPods int, containers map[string]int) {
	if m == nil {
		return
	}
	if !m.lastRelistStart.IsZero() {
		m.relistInterval.Observe(start.Sub(m.lastRelistStart).Seconds())
	}
	m.lastRelistStart = start
	m.relistDuration.Observe(d.Seconds())
	m.runningPods.Set(float64(runningPods))
	for _, s := range ContainerStates {
		m.runningContainers.WithLabelValues(s).Set(float64(containers[s]))
	}
}
