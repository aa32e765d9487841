// Package metricsapi is berth server's built-in metrics-server: it scrapes
// every node agent's /metrics/resource (the kubelet's resource metrics) on
// an interval, keeps the last two points of each series, and serves
// metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics (get, list, label
// selectors, tables) from them, as metrics-server does — so `kubectl top`
// and the HPA work with no add-on.
//
// CPU usage is a rate: the difference of two cumulative counters over the
// time between their samples (the Window); memory is the last working set.
package metricsapi

import (
	"sync"
	"time"
)

// point is one sample of a series: cumulative CPU seconds and the working
// set at a time.
type point struct {
	at        time.Time
	cpu       float64 // cumulative core-seconds
	memory    float64 // working set, bytes
	hasCPU    bool
	hasMemory bool
}

// series keeps a series' last two points with distinct times.
type series struct {
	prev, last point
	started    time.Time // the container's start (zero for nodes)
}

// add records p if it is newer than the last point.
func (s *series) add(p point) {
	if s.last.at.IsZero() {
		s.last = p
		return
	}
	if !p.at.After(s.last.at) {
		return // the agent has not sampled again since
	}
	s.prev, s.last = s.last, p
}

// Usage is a series' rate and level over a window ending at Timestamp.
type Usage struct {
	Timestamp time.Time
	Window    time.Duration
	// NanoCores is the CPU rate; MemoryBytes the working set.
	NanoCores, MemoryBytes int64
}

// usage computes the series' usage; false while it has fewer than two
// points, or when the counter went back (a restarted container).
func (s *series) usage() (Usage, bool) {
	p, l := s.prev, s.last
	if p.at.IsZero() || !p.hasCPU || !l.hasCPU || !l.hasMemory || l.cpu < p.cpu {
		return Usage{}, false
	}
	if !s.started.IsZero() && s.started.After(p.at) {
		return Usage{}, false // started within the window: the previous point is of another run
	}
	window := l.at.Sub(p.at)
	return Usage{Timestamp: l.at, Window: window, NanoCores: int64((l.cpu - p.cpu) / window.Seconds() * 1e9), MemoryBytes: int64(l.memory)}, true
}

// containerKey names a container on a node.
type containerKey struct{ namespace, pod, container string }

// podKey names a pod.
type podKey struct{ namespace, name string }

// nodeSeries are one node's series.
type nodeSeries struct {
	node       series
	containers map[containerKey]*series
}

// batch is one scrape of a node's /metrics/resource.
type batch struct {
	node       point
	containers map[containerKey]point
	started    map[containerKey]time.Time
}

// store holds every node's series.
type store struct {
	mu    sync.RWMutex
	nodes map[string]*nodeSeries
}

func newStore() *store { return &store{nodes: map[string]*nodeSeries{}} }

// record adds a node's scrape; containers it does not list are forgotten.
func (s *store) record(node string, b batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.nodes[node]
	if ns == nil {
		ns = &nodeSeries{containers: map[containerKey]*series{}}
		s.nodes[node] = ns
	}
	if !b.node.at.IsZero() {
		ns.node.add(b.node)
	}
	for k := range ns.containers {
		if _, ok := b.containers[k]; !ok {
			delete(ns.containers, k)
		}
	}
	for k, p := range b.containers {
		cs := ns.containers[k]
		if cs == nil || !b.started[k].Equal(cs.started) {
			cs = &series{started: b.started[k]} // new, or restarted: start over
			ns.containers[k] = cs
		}
		cs.add(p)
	}
}

// retain forgets the nodes not in names.
func (s *store) retain(names map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := range s.nodes {
		if !names[n] {
			delete(s.nodes, n)
		}
	}
}

// nodeUsage is a node's usage.
func (s *store) nodeUsage(node string) (Usage, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ns := s.nodes[node]
	if ns == nil {
		return Usage{}, false
	}
	return ns.node.usage()
}

// ContainerUsage is one container's usage.
type ContainerUsage struct {
	Name string
	Usage
}

// podUsage returns the usage of each pod's containers that have one.
func (s *store) podUsage() map[podKey][]ContainerUsage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[podKey][]ContainerUsage{}
	for _, ns := range s.nodes {
		for k, cs := range ns.containers {
			if u, ok := cs.usage(); ok {
				pk := podKey{k.namespace, k.pod}
				out[pk] = append(out[pk], ContainerUsage{Name: k.container, Usage: u})
			}
		}
	}
	return out
}
