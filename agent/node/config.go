// Package node keeps the agent's Node object in the apiserver, as the
// kubelet does: it registers the Node (capacity and allocatable from the
// machine, addresses, nodeInfo, the standard labels, the agent's endpoint),
// reconciles an existing one (labels; the spec is kept), renews the node's
// Lease in kube-node-lease every 10 s, writes NodeStatus (the Ready,
// MemoryPressure, DiskPressure and PIDPressure conditions, images,
// capacity) when it changed and at least every 5 minutes, and reports the
// podCIDR the control plane assigned in the Node's spec.
package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// Defaults, as the kubelet's.
const (
	DefaultKubeletPort           = 10250
	DefaultMaxPods               = 110
	DefaultStatusUpdateFrequency = 10 * time.Second
	DefaultStatusReportFrequency = 5 * time.Minute
	DefaultLeaseDuration         = 40 * time.Second
	// DefaultRuntimeDownAfter is how long the runtime's status may fail before
	// Ready turns false with "container runtime is down" (the kubelet's
	// base runtime sync threshold, maxWaitForContainerRuntime).
	DefaultRuntimeDownAfter = 30 * time.Second
	// LeaseNamespace holds the nodes' Leases.
	LeaseNamespace = "kube-node-lease"
)

// Runtime is the part of the CRI client the node manager uses; *cri.Client
// implements it.
type Runtime interface {
	Version(ctx context.Context) (*runtimeapi.VersionResponse, error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
}

// Config configures a Manager. Client, NodeName, Runtime and RootDir are
// required.
type Config struct {
	// Client talks to the apiserver with the node's credential.
	Client kubernetes.Interface
	// NodeName is the Node's name (lower case, a DNS subdomain).
	NodeName string
	// Hostname is the Hostname address and the kubernetes.io/hostname
	// label; default NodeName.
	Hostname string
	// InternalIP is the node's InternalIP address; nil: the address of the
	// interface holding the default route, else the first non-loopback one.
	InternalIP net.IP
	// Runtime is the CRI client.
	Runtime Runtime
	// RootDir is the agent's state directory; its filesystem is the node's
	// ephemeral storage.
	RootDir string
	// KubeletPort is the agent API's port (daemonEndpoints); default
	// DefaultKubeletPort.
	KubeletPort int32
	// MaxPods is the pods capacity; default DefaultMaxPods.
	MaxPods int64
	// SystemReserved and KubeReserved are subtracted from capacity for
	// allocatable (cpu, memory, ephemeral-storage, pid).
	SystemReserved, KubeReserved v1.ResourceList
	// EvictionHard are the hard eviction thresholds: subtracted from
	// capacity for allocatable (memory.available, nodefs.available) and
	// deciding the pressure conditions. Nil: DefaultEvictionHard(); use an
	// empty map for none.
	EvictionHard Thresholds
	// Pressure, when set, gives the node's pressure conditions that are
	// true (the eviction manager's, with its transition period) instead of
	// deciding them from the machine against EvictionHard.
	Pressure func() []v1.NodeConditionType
	// Labels are added to the standard labels at registration
	// (--node-labels).
	Labels map[string]string
	// Taints are the Node's taints at registration (--register-with-taints).
	Taints []v1.Taint
	// StatusUpdateFrequency is how often the status is computed (and
	// written if it changed); default DefaultStatusUpdateFrequency.
	StatusUpdateFrequency time.Duration
	// StatusReportFrequency is how often the status is written even when
	// unchanged; default DefaultStatusReportFrequency.
	StatusReportFrequency time.Duration
	// LeaseDuration is the Lease's leaseDurationSeconds; it is renewed every
	// quarter of it (10 s by default). Default DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RuntimeDownAfter: default DefaultRuntimeDownAfter.
	RuntimeDownAfter time.Duration
	// OnPodCIDRs is called with spec.podCIDRs when they are first seen set,
	// and again should they change (the agent writes its CNI config from
	// them); optional. It must not block for long.
	OnPodCIDRs func(cidrs []string)
	// Machine observes the machine; default ReadMachine(RootDir).
	Machine func() (Machine, error)
	// Clock; default the real clock.
	Clock clock.WithTicker
	// Logger; default discards.
	Logger *slog.Logger
}

// validate checks cfg and fills in defaults.
func (cfg *Config) validate() error {
	switch {
	case cfg.Client == nil:
		return fmt.Errorf("node: Config.Client is required: %w", errdefs.ErrInvalidArgument)
	case cfg.NodeName == "":
		return fmt.Errorf("node: Config.NodeName is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Runtime == nil:
		return fmt.Errorf("node: Config.Runtime is required: %w", errdefs.ErrInvalidArgument)
	case cfg.RootDir == "" && cfg.Machine == nil:
		return fmt.Errorf("node: Config.RootDir is required: %w", errdefs.ErrInvalidArgument)
	case cfg.MaxPods < 0:
		return fmt.Errorf("node: Config.MaxPods %d: must not be negative: %w", cfg.MaxPods, errdefs.ErrInvalidArgument)
	case cfg.KubeletPort < 0 || cfg.KubeletPort > 65535:
		return fmt.Errorf("node: Config.KubeletPort %d: must be a port number: %w", cfg.KubeletPort, errdefs.ErrInvalidArgument)
	case cfg.StatusUpdateFrequency < 0, cfg.StatusReportFrequency < 0, cfg.LeaseDuration < 0, cfg.RuntimeDownAfter < 0:
		return fmt.Errorf("node: Config durations must not be negative: %w", errdefs.ErrInvalidArgument)
	case cfg.LeaseDuration != 0 && cfg.LeaseDuration < time.Second:
		return fmt.Errorf("node: Config.LeaseDuration %s: must be at least 1s: %w", cfg.LeaseDuration, errdefs.ErrInvalidArgument)
	}
	if cfg.Machine == nil {
		if fi, err := os.Stat(cfg.RootDir); err != nil || !fi.IsDir() {
			return fmt.Errorf("node: Config.RootDir %q: must be an existing directory: %w", cfg.RootDir, errdefs.ErrInvalidArgument)
		}
	}
	if errs := validateNodeName(cfg.NodeName); errs != "" {
		return fmt.Errorf("node: Config.NodeName %q: %s: %w", cfg.NodeName, errs, errdefs.ErrInvalidArgument)
	}
	if cfg.Hostname == "" {
		cfg.Hostname = cfg.NodeName
	}
	if cfg.KubeletPort == 0 {
		cfg.KubeletPort = DefaultKubeletPort
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	if cfg.EvictionHard == nil {
		cfg.EvictionHard = DefaultEvictionHard()
	}
	if cfg.StatusUpdateFrequency == 0 {
		cfg.StatusUpdateFrequency = DefaultStatusUpdateFrequency
	}
	if cfg.StatusReportFrequency == 0 {
		cfg.StatusReportFrequency = DefaultStatusReportFrequency
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RuntimeDownAfter == 0 {
		cfg.RuntimeDownAfter = DefaultRuntimeDownAfter
	}
	if cfg.Machine == nil {
		root := cfg.RootDir
		cfg.Machine = func() (Machine, error) { return ReadMachine(root) }
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
