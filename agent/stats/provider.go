// Package stats is the agent's resource-usage provider, the kubelet's CRI
// stats provider in small: on a housekeeping interval it samples the node,
// every running pod and container, and keeps the result for the Summary API
// (/stats/summary) and the Prometheus endpoints (/metrics/resource,
// /metrics/cadvisor) to read — nothing is computed per request.
//
// Sources, as upstream's: the runtime (CRI ListContainerStats) for each
// container's CPU time, working set and writable layer, and ImageFsInfo for
// the image filesystem; the cgroups (v1 or v2) for what CRI does not give
// (memory usage, RSS, page faults, process counts) and for the pod and node
// totals; /proc for the pods' network interfaces (read in the sandbox's
// network namespace through one of its processes) and the node's; statfs
// and a disk-usage walk for the node filesystem, container logs and pod
// volumes (emptyDir, configMap, secret, downwardAPI, projected). CPU rates
// (usageNanoCores) come from the previous sample.
package stats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	agentcsi "berth/agent/csi"
	"berth/internal/errdefs"
)

// DefaultInterval is how often the provider samples, the kubelet's
// housekeeping interval.
const DefaultInterval = 10 * time.Second

// Runtime is the part of the CRI client the provider uses; *cri.Client
// implements it.
type Runtime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// Config configures a Provider. Runtime, NodeName and RootDir are required.
type Config struct {
	Runtime Runtime
	// NodeName names the node in the summary.
	NodeName string
	// RootDir is the agent's state directory: its filesystem is the node's
	// (nodefs), and the pods' volumes live under RootDir/pods.
	RootDir string
	// PodLogDir holds the containers' logs; default /var/log/pods.
	PodLogDir string
	// CgroupRoot is the cgroup the kubepods hierarchy lives under (the
	// kubelet's --cgroup-root); empty means "/".
	CgroupRoot string
	// Cgroups reads the cgroup hierarchies; default DetectCgroups("/sys/fs/cgroup").
	Cgroups *Cgroups
	// ProcRoot is procfs; default /proc.
	ProcRoot string
	// MountInfo is the mount table naming the filesystems' devices; default
	// /proc/self/mountinfo.
	MountInfo string
	// ClaimVolumes, if set, reports the CSI volumes pods have through
	// claims (agent/csi's NodeGetVolumeStats answers), and Pods the pods
	// the agent runs, which name those volumes.
	ClaimVolumes func() []agentcsi.ClaimVolumeStats
	Pods         func() []v1.Pod
	// Interval is the housekeeping interval; default DefaultInterval.
	Interval time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger; default discards.
	Logger *slog.Logger
}

func (cfg *Config) validate() error {
	switch {
	case cfg.Runtime == nil:
		return fmt.Errorf("stats: Config.Runtime is required: %w", errdefs.ErrInvalidArgument)
	case cfg.NodeName == "":
		return fmt.Errorf("stats: Config.NodeName is required: %w", errdefs.ErrInvalidArgument)
	case cfg.RootDir == "":
		return fmt.Errorf("stats: Config.RootDir is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Interval < 0:
		return fmt.Errorf("stats: Config.Interval %s: must not be negative: %w", cfg.Interval, errdefs.ErrInvalidArgument)
	}
	if cfg.PodLogDir == "" {
		cfg.PodLogDir = "/var/log/pods"
	}
	if cfg.Cgroups == nil {
		cg := DetectCgroups("/sys/fs/cgroup")
		cfg.Cgroups = &cg
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.MountInfo == "" {
		cfg.MountInfo = "/proc/self/mountinfo"
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Provider samples resource usage on an interval and serves the latest
// sample.
type Provider struct {
	cfg       Config
	startTime time.Time // the node's boot time

	refreshMu sync.Mutex             // one sample at a time
	prevCPU   map[string]cpuSample   // by sample key: the last cumulative CPU time
	volCache  map[string]cachedUsage // by directory: disk usage walks, reused for volumeTTL
	nodeFs    *FsUsage               // this sample's statfs of RootDir
	logFs     *FsUsage               // and of PodLogDir

	mu     sync.RWMutex
	latest *Snapshot
	err    error // why the last sample failed; nil when it did not
}

// New validates cfg and returns a provider; Run samples.
func New(cfg Config) (*Provider, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Provider{cfg: cfg, startTime: bootTime(cfg.ProcRoot, cfg.Now()), prevCPU: map[string]cpuSample{}, volCache: map[string]cachedUsage{}}, nil
}

// Run samples at once and then every interval until ctx ends.
func (p *Provider) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if err := p.Refresh(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("sampling resource usage failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Latest returns the last sample; an error wrapping errdefs.ErrUnavailable
// before the first one, and the last sample's error (with the previous
// sample, if any) when it failed.
func (p *Provider) Latest() (*Snapshot, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.latest == nil {
		if p.err != nil {
			return nil, fmt.Errorf("stats: no sample yet: %w: %w", p.err, errdefs.ErrUnavailable)
		}
		return nil, fmt.Errorf("stats: no sample yet: %w", errdefs.ErrUnavailable)
	}
	return p.latest, p.err
}

// Refresh takes one sample now and keeps it.
func (p *Provider) Refresh(ctx context.Context) error {
	p.refreshMu.Lock()
	defer p.refreshMu.Unlock()
	snap, err := p.sample(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
	if snap != nil {
		p.latest = snap
	}
	return err
}

// bootTime is when the node booted (/proc/stat's btime), or now.
func bootTime(procRoot string, now time.Time) time.Time {
	kv, err := readKeyValues(filepath.Join(procRoot, "stat"))
	if err != nil || kv["btime"] == 0 {
		return now
	}
	return time.Unix(int64(kv["btime"]), 0)
}

// cpuSample is a cumulative CPU time at an instant, for rates.
type cpuSample struct {
	usage uint64
	at    time.Time
}

// rate returns the CPU rate in nanocores since the previous sample of key
// (nil for the first) and remembers this one in next.
func (p *Provider) rate(next map[string]cpuSample, key string, usage uint64, at time.Time) *uint64 {
	next[key] = cpuSample{usage: usage, at: at}
	prev, ok := p.prevCPU[key]
	if !ok || !at.After(prev.at) || usage < prev.usage {
		return nil
	}
	nanoCores := uint64(float64(usage-prev.usage) / at.Sub(prev.at).Seconds())
	return &nanoCores
}

// errSkip is a pod or container gone between listing and reading.
var errSkip = errors.New("gone")

// readCgroup reads a cgroup, reporting a missing one as errSkip.
func (p *Provider) readCgroup(path string) (CgroupStats, error) {
	s, err := p.cfg.Cgroups.Read(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, errSkip
	}
	return s, err
}

// ImageFs returns the image filesystem's size and free bytes from the
// latest sample (for the image garbage collector).
func (p *Provider) ImageFs(context.Context) (capacity, available int64, err error) {
	snap, err := p.Latest()
	if snap == nil {
		return 0, 0, err
	}
	rt := snap.Summary.Node.Runtime
	if rt == nil || rt.ImageFs == nil || rt.ImageFs.CapacityBytes == nil || rt.ImageFs.AvailableBytes == nil {
		return 0, 0, fmt.Errorf("stats: the runtime reports no image filesystem: %w", errdefs.ErrUnavailable)
	}
	return int64(*rt.ImageFs.CapacityBytes), int64(*rt.ImageFs.AvailableBytes), nil
}
