package stats

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Source gives the latest sample; *Provider implements it.
type Source interface {
	Latest() (*Snapshot, error)
}

// The kubelet's /metrics/resource series (pkg/kubelet/metrics/collectors),
// what metrics-server scrapes.
var (
	containerLabels = []string{"container", "pod", "namespace"}
	podLabels       = []string{"pod", "namespace"}

	nodeCPUUsageDesc         = prometheus.NewDesc("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryUsageDesc      = prometheus.NewDesc("node_memory_working_set_bytes", "Current working set of the node in bytes", nil, nil)
	nodeSwapUsageDesc        = prometheus.NewDesc("node_swap_usage_bytes", "Current swap usage of the node in bytes. Reported only on non-windows systems", nil, nil)
	containerCPUUsageDesc    = prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds", containerLabels, nil)
	containerMemoryUsageDesc = prometheus.NewDesc("container_memory_working_set_bytes", "Current working set of the container in bytes", containerLabels, nil)
	containerSwapUsageDesc   = prometheus.NewDesc("container_swap_usage_bytes", "Current amount of the container swap usage in bytes. Reported only on non-windows systems", containerLabels, nil)
	containerStartTimeDesc   = prometheus.NewDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds", containerLabels, nil)
	podCPUUsageDesc          = prometheus.NewDesc("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds", podLabels, nil)
	podMemoryUsageDesc       = prometheus.NewDesc("pod_memory_working_set_bytes", "Current working set of the pod in bytes", podLabels, nil)
	podSwapUsageDesc         = prometheus.NewDesc("pod_swap_usage_bytes", "Current amount of the pod swap usage in bytes. Reported only on non-windows systems", podLabels, nil)
	scrapeErrorDesc          = prometheus.NewDesc("scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	resourceScrapeErrorDesc  = prometheus.NewDesc("resource_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// ResourceCollector serves the kubelet's /metrics/resource from src's
// latest sample, each series stamped with its sample's time.
type ResourceCollector struct{ src Source }

// NewResourceCollector returns a collector of src's latest sample.
func NewResourceCollector(src Source) *ResourceCollector { return &ResourceCollector{src: src} }

// Describe implements prometheus.Collector.
func (c *ResourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUUsageDesc, nodeMemoryUsageDesc, nodeSwapUsageDesc, containerCPUUsageDesc, containerMemoryUsageDesc,
		containerSwapUsageDesc, containerStartTimeDesc, podCPUUsageDesc, podMemoryUsageDesc, podSwapUsageDesc, scrapeErrorDesc, resourceScrapeErrorDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ResourceCollector) Collect(ch chan<- prometheus.Metric) {
	snap, err := c.src.Latest()
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, failed)
	ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, failed)
	if snap == nil {
		return
	}
	s := &snap.Summary
	stamped := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.NewMetricWithTimestamp(snap.Time, prometheus.MustNewConstMetric(d, t, v, labels...))
	}
	if cpu := s.Node.CPU; cpu != nil && cpu.UsageCoreNanoSeconds != nil {
		stamped(nodeCPUUsageDesc, prometheus.CounterValue, float64(*cpu.UsageCoreNanoSeconds)/1e9)
	}
	if mem := s.Node.Memory; mem != nil && mem.WorkingSetBytes != nil {
		stamped(nodeMemoryUsageDesc, prometheus.GaugeValue, float64(*mem.WorkingSetBytes))
	}
	if sw := s.Node.Swap; sw != nil && sw.SwapUsageBytes != nil {
		stamped(nodeSwapUsageDesc, prometheus.GaugeValue, float64(*sw.SwapUsageBytes))
	}
	for _, pod := range s.Pods {
		name, ns := pod.PodRef.Name, pod.PodRef.Namespace
		for _, ctr := range pod.Containers {
			if ctr.StartTime.Unix() > 0 {
				ch <- prometheus.MustNewConstMetric(containerStartTimeDesc, prometheus.GaugeValue, float64(ctr.StartTime.UnixNano())/1e9, ctr.Name, name, ns)
			}
			if ctr.CPU != nil && ctr.CPU.UsageCoreNanoSeconds != nil {
				stamped(containerCPUUsageDesc, prometheus.CounterValue, float64(*ctr.CPU.UsageCoreNanoSeconds)/1e9, ctr.Name, name, ns)
			}
			if ctr.Memory != nil && ctr.Memory.WorkingSetBytes != nil {
				stamped(containerMemoryUsageDesc, prometheus.GaugeValue, float64(*ctr.Memory.WorkingSetBytes), ctr.Name, name, ns)
			}
			if ctr.Swap != nil && ctr.Swap.SwapUsageBytes != nil {
				stamped(containerSwapUsageDesc, prometheus.GaugeValue, float64(*ctr.Swap.SwapUsageBytes), ctr.Name, name, ns)
			}
		}
		if pod.CPU != nil && pod.CPU.UsageCoreNanoSeconds != nil {
			stamped(podCPUUsageDesc, prometheus.CounterValue, float64(*pod.CPU.UsageCoreNanoSeconds)/1e9, name, ns)
		}
		if pod.Memory != nil && pod.Memory.WorkingSetBytes != nil {
			stamped(podMemoryUsageDesc, prometheus.GaugeValue, float64(*pod.Memory.WorkingSetBytes), name, ns)
		}
		if pod.Swap != nil && pod.Swap.SwapUsageBytes != nil {
			stamped(podSwapUsageDesc, prometheus.GaugeValue, float64(*pod.Swap.SwapUsageBytes), name, ns)
		}
	}
}
