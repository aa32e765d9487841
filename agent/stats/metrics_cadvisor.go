package stats

import (
	"github.com/prometheus/client_golang/prometheus"
)

// cadvisorLabels are the labels the kubelet puts on every cAdvisor series
// (pkg/kubelet/server's containerPrometheusLabelsFunc): the cgroup (id),
// the runtime's container ID (name), the image, and the Kubernetes names.
var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

// value is one series of a cAdvisor metric: its value and the values of the
// metric's extra labels.
type value struct {
	v      float64
	labels []string
}

// cadvisorMetric is one of cAdvisor's container metrics (its
// metrics/prometheus.go), computed from a cgroup sample.
type cadvisorMetric struct {
	name, help string
	typ        prometheus.ValueType
	extra      []string
	values     func(c *CgroupSample) []value
}

func one(v uint64) []value { return []value{{v: float64(v)}} }

func seconds(ns uint64) []value { return []value{{v: float64(ns) / 1e9}} }

// perInterface gives one series per network interface.
func perInterface(f func(Interface) uint64) func(c *CgroupSample) []value {
	return func(c *CgroupSample) []value {
		out := make([]value, 0, len(c.Network))
		for _, in := range c.Network {
			out = append(out, value{v: float64(f(in)), labels: []string{in.Name}})
		}
		return out
	}
}

// onDevice gives the container's writable-layer filesystem figure.
func onDevice(f func(FsUsage) uint64) func(c *CgroupSample) []value {
	return func(c *CgroupSample) []value {
		if c.Fs == nil {
			return nil
		}
		return []value{{v: float64(f(*c.Fs)), labels: []string{c.Fs.Device}}}
	}
}

// cadvisorMetrics are the metrics of the sets the kubelet enables (CPU,
// memory, network, disk usage, processes) that cgroups and /proc give.
var cadvisorMetrics = []cadvisorMetric{
	{name: "container_cpu_user_seconds_total", help: "Cumulative user cpu time consumed in seconds.", typ: prometheus.CounterValue,
		values: func(c *CgroupSample) []value { return seconds(c.Stats.CPUUser) }},
	{name: "container_cpu_system_seconds_total", help: "Cumulative system cpu time consumed in seconds.", typ: prometheus.CounterValue,
		values: func(c *CgroupSample) []value { return seconds(c.Stats.CPUSystem) }},
	// Without per-CPU metrics enabled (the kubelet does not), cAdvisor
	// reports the total as cpu="total".
	{name: "container_cpu_usage_seconds_total", help: "Cumulative cpu time consumed in seconds.", typ: prometheus.CounterValue, extra: []string{"cpu"},
		values: func(c *CgroupSample) []value {
			if c.Stats.CPUUsage == 0 {
				return nil
			}
			return []value{{v: float64(c.Stats.CPUUsage) / 1e9, labels: []string{"total"}}}
		}},
	{name: "container_memory_cache", help: "Number of bytes of page cache memory.", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.Cache) }},
	{name: "container_memory_rss", help: "Size of RSS in bytes.", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.RSS) }},
	{name: "container_memory_mapped_file", help: "Size of memory mapped files in bytes.", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.MappedFile) }},
	{name: "container_memory_swap", help: "Container swap usage in bytes.", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.Swap) }},
	{name: "container_memory_failcnt", help: "Number of memory usage hits limits", typ: prometheus.CounterValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.Failcnt) }},
	{name: "container_memory_usage_bytes", help: "Current memory usage in bytes, including all memory regardless of when it was accessed", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.MemoryUsage) }},
	{name: "container_memory_max_usage_bytes", help: "Maximum memory usage recorded in bytes", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.MemoryMaxUsage) }},
	{name: "container_memory_working_set_bytes", help: "Current working set in bytes.", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.WorkingSet) }},
	{name: "container_memory_total_active_file_bytes", help: "Current total active file in bytes.", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.ActiveFile) }},
	{name: "container_memory_total_inactive_file_bytes", help: "Current total inactive file in bytes.", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.InactiveFile) }},
	{name: "container_memory_failures_total", help: "Cumulative count of memory allocation failures.", typ: prometheus.CounterValue, extra: []string{"failure_type", "scope"},
		values: func(c *CgroupSample) []value {
			// The cgroup's counters are hierarchical; cAdvisor reports them
			// under both scopes.
			return []value{
				{v: float64(c.Stats.PageFaults), labels: []string{"pgfault", "container"}},
				{v: float64(c.Stats.MajorPageFaults), labels: []string{"pgmajfault", "container"}},
				{v: float64(c.Stats.PageFaults), labels: []string{"pgfault", "hierarchy"}},
				{v: float64(c.Stats.MajorPageFaults), labels: []string{"pgmajfault", "hierarchy"}},
			}
		}},
	{name: "container_spec_memory_limit_bytes", help: "Memory limit for the container.", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.Limit) }},
	{name: "container_network_receive_bytes_total", help: "Cumulative count of bytes received", typ: prometheus.CounterValue, extra: []string{"interface"},
		values: perInterface(func(i Interface) uint64 { return i.RxBytes })},
	{name: "container_network_receive_packets_total", help: "Cumulative count of packets received", typ: prometheus.CounterValue, extra: []string{"interface"},
		values: perInterface(func(i Interface) uint64 { return i.RxPackets })},
	{name: "container_network_receive_packets_dropped_total", help: "Cumulative count of packets dropped while receiving", typ: prometheus.CounterValue, extra: []string{"interface"},
		values: perInterface(func(i Interface) uint64 { return i.RxDropped })},
	{name: "container_network_receive_errors_total", help: "Cumulative count of errors encountered while receiving", typ: prometheus.CounterValue, extra: []string{"interface"},
		values: perInterface(func(i Interface) uint64 { return i.RxErrors })},
	{name: "container_network_transmit_bytes_total", help: "Cumulative count of bytes transmitted", typ: prometheus.CounterValue, extra: []string{"interface"},
		values: perInterface(func(i Interface) uint64 { return i.TxBytes })},
	{name: "container_network_transmit_packets_total", help: "Cumulative count of packets transmitted", typ: prometheus.CounterValue, extra: []string{"interface"},
		values: perInterface(func(i Interface) uint64 { return i.TxPackets })},
	{name: "container_network_transmit_packets_dropped_total", help: "Cumulative count of packets dropped while transmitting", typ: prometheus.CounterValue, extra: []string{"interface"},
		values: perInterface(func(i Interface) uint64 { return i.TxDropped })},
	{name: "container_network_transmit_errors_total", help: "Cumulative count of errors encountered while transmitting", typ: prometheus.CounterValue, extra: []string{"interface"},
		values: perInterface(func(i Interface) uint64 { return i.TxErrors })},
	{name: "container_fs_usage_bytes", help: "Number of bytes that are consumed by the container on this filesystem.", typ: prometheus.GaugeValue, extra: []string{"device"},
		values: onDevice(func(f FsUsage) uint64 { return f.Used })},
	{name: "container_fs_limit_bytes", help: "Number of bytes that can be consumed by the container on this filesystem.", typ: prometheus.GaugeValue, extra: []string{"device"},
		values: onDevice(func(f FsUsage) uint64 { return f.Capacity })},
	{name: "container_fs_inodes_total", help: "Number of Inodes", typ: prometheus.GaugeValue, extra: []string{"device"},
		values: onDevice(func(f FsUsage) uint64 { return f.Inodes })},
	{name: "container_fs_inodes_free", help: "Number of available Inodes", typ: prometheus.GaugeValue, extra: []string{"device"},
		values: onDevice(func(f FsUsage) uint64 { return f.InodesFree })},
	{name: "container_threads", help: "Number of threads running inside the container", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.Processes) }},
	{name: "container_threads_max", help: "Maximum number of threads allowed inside the container, infinity if value is zero", typ: prometheus.GaugeValue,
		values: func(c *CgroupSample) []value { return one(c.Stats.ProcessesMax) }},
}

var (
	lastSeenDesc         = prometheus.NewDesc("container_last_seen", "Last time a container was seen by the exporter", cadvisorLabels, nil)
	cadvisorStartDesc    = prometheus.NewDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds.", cadvisorLabels, nil)
	cadvisorScrapeErrors = prometheus.NewDesc("container_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// CadvisorCollector serves the kubelet's /metrics/cadvisor from src's
// latest sample: cAdvisor's metric names and labels for the node's root
// cgroup, each pod's and each container's.
type CadvisorCollector struct {
	src   Source
	descs []*prometheus.Desc // parallel to cadvisorMetrics
}

// NewCadvisorCollector returns a collector of src's latest sample.
func NewCadvisorCollector(src Source) *CadvisorCollector {
	c := &CadvisorCollector{src: src}
	for _, m := range cadvisorMetrics {
		c.descs = append(c.descs, prometheus.NewDesc(m.name, m.help, append(append([]string{}, cadvisorLabels...), m.extra...), nil))
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *CadvisorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- lastSeenDesc
	ch <- cadvisorStartDesc
	ch <- cadvisorScrapeErrors
}

// Collect implements prometheus.Collector.
func (c *CadvisorCollector) Collect(ch chan<- prometheus.Metric) {
	snap, err := c.src.Latest()
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(cadvisorScrapeErrors, prometheus.GaugeValue, failed)
	if snap == nil {
		return
	}
	for i := range snap.Cgroups {
		s := &snap.Cgroups[i]
		base := []string{s.Container, s.ID, s.Image, s.Name, s.Namespace, s.Pod}
		ch <- prometheus.MustNewConstMetric(lastSeenDesc, prometheus.GaugeValue, float64(snap.Time.Unix()), base...)
		if !s.StartTime.IsZero() {
			ch <- prometheus.MustNewConstMetric(cadvisorStartDesc, prometheus.GaugeValue, float64(s.StartTime.Unix()), base...)
		}
		for j, m := range cadvisorMetrics {
			for _, v := range m.values(s) {
				labels := append(append(make([]string, 0, len(base)+len(v.labels)), base...), v.labels...)
				ch <- prometheus.NewMetricWithTimestamp(snap.Time, prometheus.MustNewConstMetric(c.descs[j], m.typ, v.v, labels...))
			}
		}
	}
}
