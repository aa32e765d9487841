package csi

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/volumes"
	"berth/csi/nodeclient"
)

// statsCallTimeout bounds one NodeGetVolumeStats call made for a scrape.
const statsCallTimeout = 5 * time.Second

// The kubelet's volume stats metrics, labelled with the claim's namespace
// and name.
var (
	statsLabels       = []string{"namespace", "persistentvolumeclaim"}
	descCapacityBytes = prometheus.NewDesc("kubelet_volume_stats_capacity_bytes", "Capacity in bytes of the volume", statsLabels, nil)
	descAvailable     = prometheus.NewDesc("kubelet_volume_stats_available_bytes", "Number of available bytes in the volume", statsLabels, nil)
	descUsedBytes     = prometheus.NewDesc("kubelet_volume_stats_used_bytes", "Number of used bytes in the volume", statsLabels, nil)
	descInodes        = prometheus.NewDesc("kubelet_volume_stats_inodes", "Maximum number of inodes in the volume", statsLabels, nil)
	descInodesFree    = prometheus.NewDesc("kubelet_volume_stats_inodes_free", "Number of free inodes in the volume", statsLabels, nil)
	descInodesUsed    = prometheus.NewDesc("kubelet_volume_stats_inodes_used", "Number of used inodes in the volume", statsLabels, nil)
)

// statsCollector serves kubelet_volume_stats_* for the CSI volumes
// published through claims on the node, from NodeGetVolumeStats answers
// at most ttl old (drivers without GET_VOLUME_STATS are not asked).
type statsCollector struct {
	rootDir string
	drivers *Manager
	ttl     time.Duration
	log     *slog.Logger

	mu    sync.Mutex
	cache map[string]cachedStats // target path → last answer
}

type cachedStats struct {
	at    time.Time
	stats nodeclient.VolumeStats
}

func newStatsCollector(rootDir string, drivers *Manager, ttl time.Duration, log *slog.Logger) *statsCollector {
	return &statsCollector{rootDir: rootDir, drivers: drivers, ttl: ttl, log: log, cache: map[string]cachedStats{}}
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCapacityBytes, descAvailable, descUsedBytes, descInodes, descInodesFree, descInodesUsed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	vols, err := volumes.PublishedCSIVolumes(c.rootDir)
	if err != nil {
		c.log.Warn("listing the published CSI volumes for their stats failed", "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}      // target paths still published
	claims := map[[2]string]bool{} // one series per claim, however many pods use it
	caps := map[string]bool{}      // driver → has GET_VOLUME_STATS
	now := time.Now()
	for _, v := range vols {
		if v.ClaimName == "" {
			continue // inline volumes have no claim to label them with, as upstream
		}
		seen[v.TargetPath] = true
		key := [2]string{v.PodNamespace, v.ClaimName}
		if claims[key] {
			continue
		}
		st, ok := c.stats(v, caps, now)
		if !ok {
			continue
		}
		claims[key] = true
		if st.HasBytes {
			ch <- gauge(descCapacityBytes, st.CapacityBytes, key)
			ch <- gauge(descAvailable, st.AvailableBytes, key)
			ch <- gauge(descUsedBytes, st.UsedBytes, key)
		}
		if st.HasInodes {
			ch <- gauge(descInodes, st.Inodes, key)
			ch <- gauge(descInodesFree, st.InodesFree, key)
			ch <- gauge(descInodesUsed, st.InodesUsed, key)
		}
	}
	c.prune(seen)
}

// prune forgets the answers for target paths not in seen. Callers hold c.mu.
func (c *statsCollector) prune(seen map[string]bool) {
	for target := range c.cache {
		if !seen[target] {
			delete(c.cache, target)
		}
	}
}

// ClaimVolumeStats is the usage of a CSI volume a pod has through a
// PersistentVolumeClaim, as its driver reports it.
type ClaimVolumeStats struct {
	PodUID               types.UID
	Namespace, ClaimName string
	nodeclient.VolumeStats
}

// ClaimVolumeStats returns the usage of the claim-backed CSI volumes
// published into pods, one per pod and claim, from NodeGetVolumeStats
// answers at most the stats TTL old (drivers without GET_VOLUME_STATS are
// left out).
func (m *Manager) ClaimVolumeStats() []ClaimVolumeStats {
	c := m.stats
	vols, err := volumes.PublishedCSIVolumes(c.rootDir)
	if err != nil {
		c.log.Warn("listing the published CSI volumes for their stats failed", "err", err)
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	caps := map[string]bool{}
	now := time.Now()
	var out []ClaimVolumeStats
	for _, v := range vols {
		if v.ClaimName == "" {
			continue
		}
		seen[v.TargetPath] = true
		if st, ok := c.stats(v, caps, now); ok {
			out = append(out, ClaimVolumeStats{PodUID: v.PodUID, Namespace: v.PodNamespace, ClaimName: v.ClaimName, VolumeStats: st})
		}
	}
	c.prune(seen)
	return out
}

// stats returns the volume's stats from the cache or, when older than the
// TTL, from its driver. Callers hold c.mu.
func (c *statsCollector) stats(v volumes.PublishedCSIVolume, caps map[string]bool, now time.Time) (nodeclient.VolumeStats, bool) {
	if e, ok := c.cache[v.TargetPath]; ok && now.Sub(e.at) < c.ttl {
		return e.stats, true
	}
	client, ok := c.drivers.CSIClient(v.Driver)
	if !ok {
		return nodeclient.VolumeStats{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsCallTimeout)
	defer cancel()
	has, known := caps[v.Driver]
	if !known {
		dc, err := client.NodeGetCapabilities(ctx)
		if err != nil {
			c.log.Warn("NodeGetCapabilities for volume stats failed", "driver", v.Driver, "err", err)
			return nodeclient.VolumeStats{}, false
		}
		has = dc.GetVolumeStats
		caps[v.Driver] = has
	}
	if !has {
		return nodeclient.VolumeStats{}, false
	}
	st, err := client.NodeGetVolumeStats(ctx, v.Handle, v.TargetPath)
	if err != nil {
		c.log.Warn("NodeGetVolumeStats failed", "driver", v.Driver, "handle", v.Handle, "claim", v.PodNamespace+"/"+v.ClaimName, "err", err)
		return nodeclient.VolumeStats{}, false
	}
	c.cache[v.TargetPath] = cachedStats{at: now, stats: st}
	return st, true
}

func gauge(d *prometheus.Desc, v int64, key [2]string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), key[0], key[1])
}
