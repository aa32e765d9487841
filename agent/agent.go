// Package agent is berth's node agent, composed: it runs the pods of a
// static-pod manifest directory on a CRI runtime the way the kubelet does,
// and, joined to a control plane (Config.Server or Config.Kubeconfig), the
// pods the apiserver binds to its node.
//
//	manifest source ──┐                            ┌──▶ status manager ──▶ GET /pods
//	apiserver source ─┴─ADD/REMOVE──▶ pod workers ─┤         │
//	 (agent/source)            read ▲   ▲ │ act    │         └──▶ status sync ──▶ pods/status, deletion
//	             runtime cache ─────┘   │ ▼ (hooks)└──▶ Events (client-go recorder)
//	               ▲ relist      wake   │ CRI
//	               └──── PLEG ──────────┘
//
// At start it connects to the runtime; joined, it registers its Node (lease,
// status) and, without Config.PodCIDR, waits for the Node's spec.podCIDR;
// then it writes and checks the node's CNI configuration, adopts the pods
// already running (by their kubelet labels), and removes the ones no source
// asks for any more once every source delivered its first list. Joined, it
// also keeps mirror pods for its static pods, completes graceful deletions
// (stop with the pod's grace, then the status sync deletes with grace 0,
// precondition UID),
// pulls with the pods' imagePullSecrets, reads configMaps and secrets for
// volumes from the apiserver, and serves the authenticated agent API
// (kubeletapi) on Config.KubeletPort. Its kubelet-compatible metrics
// (agent/metrics, the prober's) live in one registry served on /metrics of
// the read-only port and of the agent API.
package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"berth/agent/admission"
	"berth/agent/apilb"
	"berth/agent/backoff"
	"berth/agent/bootstrap"
	"berth/agent/cgroups"
	"berth/agent/containerconfig"
	agentcsi "berth/agent/csi"
	"berth/agent/dns"
	"berth/agent/envsource"
	"berth/agent/eviction"
	"berth/agent/imagegc"
	"berth/agent/images"
	"berth/agent/kubeletapi"
	"berth/agent/metrics"
	"berth/agent/mirror"
	"berth/agent/node"
	"berth/agent/pleg"
	"berth/agent/podruntime"
	"berth/agent/podstate"
	"berth/agent/podworker"
	"berth/agent/qos"
	"berth/agent/runtimeclass"
	"berth/agent/sandboxconfig"
	"berth/agent/server"
	"berth/agent/source"
	apisource "berth/agent/source/apiserver"
	"berth/agent/source/manifest"
	"berth/agent/stats"
	"berth/agent/status"
	"berth/agent/statussync"
	"berth/agent/sysctl"
	"berth/agent/volumes"
	"berth/cni"
	"berth/cri"
	"berth/internal/supervisor"
	"berth/probes"
)

// Agent is a configured node agent; Run runs it.
type Agent struct {
	cfg Config

	mu            sync.Mutex
	networkErr    error // why the node's CNI config does not work; nil when it does
	criNetworkErr error // why the runtime reports its network not ready
	runtimeErr    error // why the runtime is not ready; nil when it is

	evictions atomic.Pointer[eviction.Manager] // once wired: the node's pressure conditions
}

// New validates cfg (see Config) and returns an agent.
func New(cfg Config) (*Agent, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Agent{cfg: cfg}, nil
}

// Config returns the agent's configuration with the defaults applied.
func (a *Agent) Config() Config { return a.cfg }

// Run runs the agent until ctx ends or a component fails. Stopping it leaves
// the pods running; the next run adopts them.
func (a *Agent) Run(ctx context.Context) error {
	cfg := &a.cfg
	for _, dir := range []string{cfg.RootDir, cfg.PodLogDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	run := supervisor.New(ctx, supervisor.Config{Logger: cfg.Logger})
	defer run.Stop() // on an early return
	n, err := a.connect(ctx)
	if err != nil {
		return err
	}
	defer n.client.Close()
	if cfg.Joined() {
		if err := a.join(ctx, run, n); err != nil {
			return err
		}
		if n.podCIDR == "" {
			return errors.Join(run.Wait(), run.Stop()) // ctx ended while waiting for the Node's podCIDR
		}
	}
	if n.kube != nil && !cfg.DisableServiceProxy {
		proxier, err := a.serviceProxy(n.kube, n.podCIDR, n.registry)
		if err != nil {
			return err
		}
		cfg.Logger.Info("running the service proxy", "table", cfg.ProxyTable)
		run.Go("service proxy", proxier.Run)
	}
	if err := a.podNetwork(ctx, n); err != nil {
		return err
	}
	p, err := a.wire(ctx, run, n)
	if err != nil {
		return err
	}
	defer p.close()
	if err := a.runPods(run, n, p); err != nil {
		return err
	}
	if n.kube != nil && !cfg.DisablePodRoutes {
		if err := a.podRoutes(run, n, p); err != nil {
			return err
		}
	}
	return a.serve(run, n, p)
}

// conn is what the agent connected to: the runtime, and, joined, the
// apiserver; podCIDR is the node's pod range.
type conn struct {
	registry *prometheus.Registry
	metrics  *metrics.Metrics
	client   *cri.Client
	version  *runtimeapi.VersionResponse
	kube     kubernetes.Interface // nil: standalone
	restCfg  *rest.Config
	podCIDR  string
}

// connect makes the metrics registry and connects to the runtime.
func (a *Agent) connect(ctx context.Context) (*conn, error) {
	// One registry for everything that records metrics, served on the
	// read-only port's and the agent API's /metrics.
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	met, err := metrics.New(registry, a.cfg.NodeName)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	client, err := cri.New(ctx, cri.Config{Endpoint: a.cfg.RuntimeEndpoint, UnaryInterceptors: []grpc.UnaryClientInterceptor{met.RuntimeInterceptor()}})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	version := client.RuntimeVersion()
	a.cfg.Logger.Info("connected to the container runtime", "runtime", version.GetRuntimeName(), "version", version.GetRuntimeVersion())
	return &conn{registry: registry, metrics: met, client: client, version: version, podCIDR: a.cfg.PodCIDR}, nil
}

// join connects to the apiserver, registers the Node (run keeps its lease
// and status) and, without Config.PodCIDR, waits for the Node's
// spec.podCIDR (n.podCIDR stays empty when ctx ends first).
func (a *Agent) join(ctx context.Context, run *supervisor.Supervisor, n *conn) error {
	cfg := &a.cfg
	var err error
	var lb *apilb.Balancer
	if n.restCfg, lb, err = cfg.restConfig(); err != nil {
		return err
	}
	if n.kube, err = kubernetes.NewForConfig(n.restCfg); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if n.kube, err = a.nodeCredential(ctx, run, n.restCfg, n.kube); err != nil {
		return err
	}
	if lb != nil {
		run.Go("apiserver balancer", func(ctx context.Context) error { return lb.Run(ctx, n.kube) })
	}
	cidrs := make(chan []string, 1)
	nodes, err := node.New(node.Config{
		Client: n.kube, NodeName: cfg.NodeName, InternalIP: net.ParseIP(cfg.NodeIP), Runtime: n.client, RootDir: cfg.RootDir,
		KubeletPort: int32(cfg.KubeletPort), Logger: cfg.Logger,
		MaxPods: cfg.MaxPods, SystemReserved: cfg.SystemReserved, KubeReserved: cfg.KubeReserved, EvictionHard: cfg.EvictionHard,
		Labels: cfg.NodeLabels, Taints: cfg.RegisterWithTaints,
		StatusUpdateFrequency: cfg.NodeStatusUpdateFrequency, StatusReportFrequency: cfg.NodeStatusReportFrequency,
		Pressure: a.pressure,
		OnPodCIDRs: func(c []string) {
			select {
			case cidrs <- c:
			default:
			}
		},
	})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	run.Go("node", nodes.Run)
	if n.podCIDR != "" {
		return nil
	}
	cfg.Logger.Info("waiting for the Node's spec.podCIDR")
	select {
	case c := <-cidrs:
		n.podCIDR = c[0]
	case <-run.Context().Done():
	}
	return nil
}

// podNetwork writes and checks the node's CNI configuration and waits a
// little for the runtime to load it.
func (a *Agent) podNetwork(ctx context.Context, n *conn) error {
	cfg, log := &a.cfg, a.cfg.Logger
	netCfg := cni.Config{
		NetworkName: cfg.CNINetworkName, BridgeName: cfg.CNIBridge, PodCIDRs: []string{n.podCIDR},
		BinDirs: cfg.CNIBinDirs, ConfDir: cfg.CNIConfDir, DataDir: filepath.Join(cfg.RootDir, "cni", "networks"),
	}
	path, err := cni.Write(netCfg)
	if err != nil {
		return fmt.Errorf("agent: writing the CNI config: %w", err)
	}
	log.Info("wrote the node's CNI config", "path", path, "bridge", cfg.CNIBridge, "podCIDR", n.podCIDR)
	if err := cni.Check(ctx, netCfg); err != nil {
		log.Error("the CNI config does not work on this node; pods needing the pod network wait", "err", err)
		a.setNetwork(fmt.Errorf("CNI check: %w", err))
	}
	if err := waitNetwork(ctx, n.client, 10*time.Second); err != nil {
		log.Warn("the runtime's pod network is not ready yet; pods needing it wait", "err", err)
	}
	return nil
}

// pods is the agent's pod path, wired: the runtime cache the PLEG fills,
// the pod workers and their managers, the status manager.
type pods struct {
	cache    *podruntime.Cache
	statuses *status.Manager
	workers  *podworker.Manager
	vols     *volumes.Manager
	csi      *agentcsi.Manager
	usage    *stats.Provider
	prober   *probes.Manager
	backOff  *backoff.Tracker
	recorder probes.EventRecorder
	events   record.EventRecorder // the same, nil standalone
	close    func()               // stops the event broadcaster
}

// wire builds the pod path (source → workers → hooks → runtime → cache →
// status) on n; run runs the managers that have loops of their own.
func (a *Agent) wire(ctx context.Context, run *supervisor.Supervisor, n *conn) (*pods, error) {
	cfg := &a.cfg
	p := &pods{statuses: status.NewManager(), backOff: backoff.New(cfg.ContainerBackOff), close: func() {},
		cache: podruntime.NewCache(podruntime.New(n.client))}
	var envCfg envsource.Config // standalone: no objects, no services
	var pullCreds func(context.Context, *v1.Pod, string) []*runtimeapi.AuthConfig
	var runtimeHandler func(*v1.Pod) (string, error)
	if n.kube != nil {
		events := record.NewBroadcaster(record.WithContext(ctx))
		events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: n.kube.CoreV1().Events("")})
		p.close = events.Shutdown
		p.events = events.NewRecorder(kubescheme.Scheme, v1.EventSource{Component: "kubelet", Host: cfg.NodeName})
		p.recorder = p.events
		services := envsource.NewServiceCache(n.kube)
		run.Go("services", services.Run)
		pullCreds = pullCredentials(n.kube, cfg.Logger)
		classes, err := runtimeclass.New(n.kube)
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		run.Go("runtime classes", classes.Run)
		runtimeHandler = classes.Handler
		envCfg.Services = services
	}
	// Unset limits read as the node's allocatable in the downward API.
	allocatable, err := node.MachineAllocatable(cfg.RootDir)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if p.vols, p.csi, envCfg.Objects, err = a.volumes(run, n, p.recorder, allocatable); err != nil {
		return nil, err
	}
	wcfg, err := a.workerConfig(n, p, pullCreds, allocatable)
	if err != nil {
		return nil, err
	}
	wcfg.Env, wcfg.PodRuntimeHandler = envsource.New(envCfg), runtimeHandler // each pod's RuntimeClass's
	if wcfg.Admit, err = a.admission(run, n); err != nil {
		return nil, err
	}
	if p.workers, err = podworker.New(wcfg); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if err := a.housekeeping(run, n, p); err != nil {
		return nil, err
	}
	return p, nil
}

// housekeeping samples resource usage for the agent API (p.usage) and
// collects unused images on its image-filesystem figures, both run by run.
func (a *Agent) housekeeping(run *supervisor.Supervisor, n *conn, p *pods) error {
	cfg := &a.cfg
	usage, err := stats.New(stats.Config{
		Runtime: n.client, NodeName: cfg.NodeName, RootDir: cfg.RootDir, PodLogDir: cfg.PodLogDir,
		CgroupRoot: cfg.CgroupRoot, Interval: cfg.HousekeepingInterval, Logger: cfg.Logger,
		ClaimVolumes: p.csi.ClaimVolumeStats, Pods: p.statuses.List,
	})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	p.usage = usage
	run.Go("resource usage", usage.Run)
	imageGC, err := imagegc.New(imagegc.Config{Runtime: n.client, ImageFs: usage.ImageFs, Policy: cfg.ImageGCPolicy, Logger: cfg.Logger})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	run.Go("image gc", imageGC.Run)
	return a.evictionManager(run, n, p, imageGC)
}

// evictionManager runs the node-pressure eviction manager (agent/eviction)
// on the housekeeping samples: it evicts through the pod workers, reclaims
// images through imageGC, and gives the node its pressure conditions and
// the workers its admission.
func (a *Agent) evictionManager(run *supervisor.Supervisor, n *conn, p *pods, imageGC *imagegc.Manager) error {
	cfg := &a.cfg
	thresholds, err := eviction.Thresholds(cfg.EvictionHard, cfg.EvictionSoft, cfg.EvictionSoftGracePeriod, cfg.EvictionMinimumReclaim)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	ecfg := eviction.Config{
		Thresholds: thresholds, PressureTransitionPeriod: cfg.EvictionPressureTransitionPeriod,
		MaxPodGracePeriod: cfg.EvictionMaxPodGracePeriod, Period: cfg.HousekeepingInterval,
		Summary: func() (*statsapi.Summary, time.Time, error) {
			snap, err := p.usage.Latest()
			if snap == nil {
				return nil, time.Time{}, err
			}
			return &snap.Summary, snap.Time, err
		},
		Refresh: p.usage.Refresh,
		Pods:    p.activePods,
		Kill: func(pod *v1.Pod, grace time.Duration, message string, condition *v1.PodCondition) bool {
			return p.workers.Evict(pod.UID, podworker.Eviction{GracePeriod: grace, Reason: eviction.Reason, Message: message, Condition: condition})
		},
		Stopped:                   p.workers.Stopped,
		DeleteAllUnusedContainers: p.workers.DeleteAllUnusedContainers,
		DeleteUnusedImages:        imageGC.DeleteUnused,
		DedicatedImageFs:          dedicatedImageFs(cfg.RootDir, n.client),
		Registerer:                n.registry,
		Logger:                    cfg.Logger,
	}
	if p.events != nil {
		ecfg.Recorder = p.events
		ecfg.NodeRef = &v1.ObjectReference{Kind: "Node", Name: cfg.NodeName, UID: types.UID(cfg.NodeName)}
	}
	m, err := eviction.New(ecfg)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	a.evictions.Store(m)
	run.Go("eviction manager", m.Run)
	return nil
}

// pressure is the node's pressure conditions, the eviction manager's
// (none before it runs).
func (a *Agent) pressure() []v1.NodeConditionType {
	if m := a.evictions.Load(); m != nil {
		return m.Conditions()
	}
	return nil
}

// admitUnderPressure is the eviction manager's admission (all pods before
// it runs).
func (a *Agent) admitUnderPressure(pod *v1.Pod) (reason, message string, ok bool) {
	if m := a.evictions.Load(); m != nil {
		return m.Admit(pod)
	}
	return "", "", true
}

// admission is the node's admission of pods, the kubelet's handlers in
// its order: the eviction manager's under pressure, the sysctl allowlist,
// then the general predicates against the agent's Node (agent/admission).
func (a *Agent) admission(run *supervisor.Supervisor, n *conn) (func(*v1.Pod, []*v1.Pod) (string, string, bool), error) {
	cfg := &a.cfg
	sysctls, err := sysctl.NewAllowlist(append(sysctl.Safe(kernelRelease()), cfg.AllowedUnsafeSysctls...))
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	nodeObj := a.localNode
	if n.kube != nil {
		watch, err := admission.WatchNode(n.kube, cfg.NodeName, a.localNode)
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		run.Go("admission node watch", watch.Run)
		nodeObj = watch.Get
	}
	predicates := admission.New(nodeObj)
	return func(pod *v1.Pod, others []*v1.Pod) (string, string, bool) {
		if reason, message, ok := a.admitUnderPressure(pod); !ok {
			return reason, message, false
		}
		if reason, message, ok := sysctls.Admit(pod); !ok {
			return reason, message, false
		}
		return predicates.Admit(pod, others)
	}, nil
}

// localNode is the Node the agent registers, as far as admission reads it
// (labels, taints, allocatable): the kubelet's initialNode, for a
// standalone agent or before the Node is watched.
func (a *Agent) localNode() (*v1.Node, error) {
	cfg := &a.cfg
	machine, err := node.ReadMachine(cfg.RootDir)
	if err != nil {
		return nil, err
	}
	maxPods, evictionHard := cfg.MaxPods, cfg.EvictionHard
	if maxPods == 0 {
		maxPods = node.DefaultMaxPods
	}
	if evictionHard == nil {
		evictionHard = node.DefaultEvictionHard()
	}
	labels := node.DefaultLabels(cfg.NodeName)
	maps.Copy(labels, cfg.NodeLabels)
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: cfg.NodeName, Labels: labels},
		Spec:       v1.NodeSpec{Taints: cfg.RegisterWithTaints},
		Status:     v1.NodeStatus{Allocatable: node.Allocatable(node.Capacity(machine, maxPods), cfg.SystemReserved, cfg.KubeReserved, evictionHard)},
	}, nil
}

// activePods are the pods the agent runs that have not ended: the
// candidates for eviction.
func (p *pods) activePods() []*v1.Pod {
	var out []*v1.Pod
	for _, pod := range p.statuses.List() {
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		out = append(out, &pod)
	}
	return out
}

// dedicatedImageFs reports whether the runtime's image filesystem is
// another device than the one holding rootDir (the node's).
func dedicatedImageFs(rootDir string, client *cri.Client) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		resp, err := client.ImageFsInfo(ctx)
		if err != nil {
			return false, err
		}
		fss := resp.GetImageFilesystems()
		if len(fss) == 0 || fss[0].GetFsId().GetMountpoint() == "" {
			return false, fmt.Errorf("the runtime names no image filesystem")
		}
		var node, images syscall.Stat_t
		if err := syscall.Stat(rootDir, &node); err != nil {
			return false, err
		}
		if err := syscall.Stat(fss[0].GetFsId().GetMountpoint(), &images); err != nil {
			return false, err
		}
		return node.Dev != images.Dev, nil
	}
}

// volumes makes the volume manager (with the CSI plugins, run by run) and,
// joined, the apiserver client volumes and container environments read
// ConfigMaps and Secrets with (nil standalone).
func (a *Agent) volumes(run *supervisor.Supervisor, n *conn, recorder probes.EventRecorder, allocatable v1.ResourceList) (*volumes.Manager, *agentcsi.Manager, envsource.Objects, error) {
	cfg := &a.cfg
	volCfg := volumes.Config{RootDir: cfg.RootDir, Logger: cfg.Logger, NodeAllocatable: allocatable}
	var objects envsource.Objects
	if n.kube != nil {
		client, err := volumes.NewClientSource(n.kube)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("agent: %w", err)
		}
		// The same client also asks the TokenRequest API for projected
		// service-account tokens.
		volCfg.Objects, volCfg.Claims, volCfg.Tokens, volCfg.Recorder = client, client, client, recorder
		objects = client
	}
	// CSI drivers register through <root-dir>/plugins_registry (agent/csi).
	csiPlugins, err := agentcsi.New(agentcsi.Config{RootDir: cfg.RootDir, NodeName: cfg.NodeName, Client: n.kube, Registerer: n.registry, Logger: cfg.Logger})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("agent: %w", err)
	}
	run.Go("csi plugins", csiPlugins.Run)
	volCfg.CSI, volCfg.MountBackOffInitial, volCfg.MountBackOffMax = csiPlugins, volumes.DefaultMountBackOffInitial, volumes.DefaultMountBackOffMax
	vols, err := volumes.New(volCfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("agent: %w", err)
	}
	return vols, csiPlugins, objects, nil
}

// workerConfig is the pod workers' Config on n, with p's managers, the
// image puller, the prober and the hook runner it makes.
func (a *Agent) workerConfig(n *conn, p *pods, pullCreds func(context.Context, *v1.Pod, string) []*runtimeapi.AuthConfig, allocatable v1.ResourceList) (podworker.Config, error) {
	cfg := &a.cfg
	memory, err := memoryCapacity()
	if err != nil {
		return podworker.Config{}, fmt.Errorf("agent: %w", err)
	}
	puller, err := images.NewPuller(images.Config{Images: n.client, InitialBackOff: cfg.ImageBackOffInitial, MaxBackOff: cfg.ImageBackOffMax})
	if err != nil {
		return podworker.Config{}, fmt.Errorf("agent: %w", err)
	}
	probeHTTP := probes.NewHTTPGetter() // shared by probes and hooks
	if p.prober, err = probes.New(probes.Config{Exec: n.client, HTTP: probeHTTP, Recorder: p.recorder, Registerer: n.registry, Logger: cfg.Logger}); err != nil {
		return podworker.Config{}, fmt.Errorf("agent: %w", err)
	}
	hooks, err := probes.NewHookRunner(probes.HookConfig{Exec: n.client, HTTP: probeHTTP, Recorder: p.recorder, Logger: cfg.Logger})
	if err != nil {
		return podworker.Config{}, fmt.Errorf("agent: %w", err)
	}
	mounts, err := cgroups.Mountpoints("/proc/self/mountinfo")
	if err != nil {
		cfg.Logger.Warn("cannot list cgroup hierarchies; pod cgroups will not be removed", "err", err)
	}
	nodeIP := net.ParseIP(cfg.NodeIP)
	return podworker.Config{
		CRI: n.client, Cache: p.cache, Status: p.statuses, BackOff: p.backOff,
		Images: puller, Volumes: p.vols, Probes: p.prober, Hooks: hooks,
		SandboxOptions: sandboxconfig.Options{PodLogDir: cfg.PodLogDir, CgroupRoot: cfg.CgroupRoot, DNS: dns.Options{
			ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain, ResolvConf: cfg.ResolvConf, NodeIPs: []net.IP{nodeIP},
		}},
		ContainerOptions: containerconfig.Options{
			NodeName: cfg.NodeName, HostIPs: []string{cfg.NodeIP}, MemoryCapacity: memory, CgroupV2: cgroupV2(),
			NodeAllocatable: allocatable,
		},
		NetworkReady: a.networkReady,
		PodCleanup: func(uid types.UID, _ *v1.Pod) error {
			return cgroups.RemovePod(mounts, cfg.CgroupRoot, uid)
		},
		RootDir:         cfg.RootDir,
		RuntimeName:     n.version.GetRuntimeName(),
		HostIP:          cfg.NodeIP,
		QOSClass:        qos.Class,
		MaxStarts:       cfg.MaxParallelStarts,
		PullCredentials: pullCreds,
		Recorder:        p.recorder,
		Metrics:         n.metrics,
		Logger:          cfg.Logger,
	}, nil
}

// runPods runs the pod path: the workers, the PLEG, the pod sources, and,
// joined, the status sync, the mirror pods and the volumes' resync.
func (a *Agent) runPods(run *supervisor.Supervisor, n *conn, p *pods) error {
	cfg := &a.cfg
	var sources []source.PodSource
	var mirrors *mirror.Manager // nil when standalone
	var apiSrc *apisource.Source
	var err error
	if n.kube != nil {
		if apiSrc, err = apisource.New(apisource.Config{Client: n.kube, NodeName: cfg.NodeName, Handler: newAPIPods(p.workers, cfg.Logger), Logger: cfg.Logger}); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		sources = append(sources, apiSrc)
		syncer, err := statussync.New(statussync.Config{Client: n.kube, Status: p.statuses, Pods: apiSrc.Lister(), Metrics: n.metrics, Logger: cfg.Logger})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		run.Go("pod status sync", syncer.Run)
		run.Go("volume resync", func(ctx context.Context) error {
			return p.vols.RunResync(ctx, volumes.DefaultResyncPeriod, volumes.ListedPods(apiSrc.Lister()))
		})
		if cfg.PodManifestPath != "" {
			if mirrors, err = mirror.New(mirror.Config{Client: n.kube, NodeName: cfg.NodeName, Pods: apiSrc.Lister(), Logger: cfg.Logger}); err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			run.Go("mirror pods", mirrors.Run)
		}
	}
	if cfg.PodManifestPath != "" {
		mcfg := manifest.Config{Dir: cfg.PodManifestPath, NodeName: cfg.NodeName, Rescan: cfg.ManifestRescan, Logger: cfg.Logger}
		src, err := manifest.NewPodSource(mcfg, &staticPods{workers: p.workers, mirrors: mirrors})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		sources = append(sources, src)
	}
	detector, err := a.pleg(run.Context(), n, p, sources)
	if err != nil {
		return err
	}
	run.Go("pod workers", p.workers.Run)
	for _, src := range sources {
		run.Go(fmt.Sprintf("pod source %T", src), src.Run)
	}
	run.Go("pleg", detector.Run)
	run.Go("runtime status", func(ctx context.Context) error { a.watchRuntime(ctx, n.client); return nil })
	run.Go("back-off gc", func(ctx context.Context) error { runBackOffGC(ctx, p.backOff); return nil })
	return nil
}

// pleg makes the PLEG: it relists the runtime into the cache and wakes the
// workers of the pods that changed; once every source delivered its first
// list, it removes the runtime's pods no source asks for, and every minute
// the volumes of pods gone from both the runtime and the agent.
func (a *Agent) pleg(ctx context.Context, n *conn, p *pods, sources []source.PodSource) (*pleg.PLEG, error) {
	var lastVolumeGC time.Time
	var suspects map[types.UID]bool
	return pleg.New(pleg.Config{
		Cache: p.cache, CRI: n.client, Period: a.cfg.RelistPeriod, Metrics: n.metrics, Logger: a.cfg.Logger,
		Changed: p.workers.Observed,
		Relisted: func(running map[types.UID]*podstate.Pod) {
			if !synced(sources) {
				return // until every source delivered its pods, every pod may be wanted
			}
			active := make([]types.UID, 0, len(running))
			for uid, rp := range running {
				active = append(active, uid)
				if !p.workers.Known(uid) {
					a.cfg.Logger.Info("removing a pod no source asks for", "pod", rp.Namespace+"/"+rp.Name, "uid", uid)
					p.workers.RemoveOrphan(uid)
				}
			}
			// Volumes of pods gone from both the runtime and the agent
			// (removed while it was down, or a failed teardown), checked
			// every minute and removed when seen orphaned twice in a row,
			// so a pod being added as the check runs is never touched.
			if time.Since(lastVolumeGC) < time.Minute {
				return
			}
			lastVolumeGC = time.Now()
			suspects = a.collectOrphanVolumes(ctx, p.vols, append(active, p.workers.UIDs()...), suspects)
		},
	})
}

// synced reports whether every source delivered its first list.
func synced(sources []source.PodSource) bool {
	for _, src := range sources {
		select {
		case <-src.Synced():
		default:
			return false
		}
	}
	return true
}

// runBackOffGC drops expired crash-loop back-off entries every minute
// until ctx ends.
func runBackOffGC(ctx context.Context, tracker *backoff.Tracker) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			tracker.GC(now)
		}
	}
}

// serve serves the read-only API (Config.ReadOnlyPort) and, joined, the
// authenticated agent API (Config.KubeletPort), then waits for run.
func (a *Agent) serve(run *supervisor.Supervisor, n *conn, p *pods) error {
	cfg := &a.cfg
	if cfg.ReadOnlyPort != 0 {
		lis, err := net.Listen("tcp", net.JoinHostPort(cfg.ReadOnlyAddress, strconv.Itoa(cfg.ReadOnlyPort)))
		if err != nil {
			return fmt.Errorf("agent: read-only port: %w", err)
		}
		srv, err := server.New(server.Config{Listener: lis, Pods: p.statuses.List, Healthy: a.healthy, Metrics: n.registry, Logger: cfg.Logger})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		cfg.Logger.Info("serving the read-only API", "addr", lis.Addr().String())
		run.Go("read-only API", srv.Run)
	}
	if n.restCfg != nil {
		caFile, err := cfg.clientCAFile(n.restCfg)
		if err != nil {
			return err
		}
		run.Go("agent API", func(ctx context.Context) error { return a.serveAgentAPI(ctx, run, n, p, caFile) })
	}
	return errors.Join(run.Wait(), run.Stop())
}

// serveAgentAPI serves the authenticated agent API (kubeletapi) with the
// serving certificate given, or one from the CSR API (rotated by run).
func (a *Agent) serveAgentAPI(ctx context.Context, run *supervisor.Supervisor, n *conn, p *pods, caFile string) error {
	cfg := &a.cfg
	nodeIP := net.ParseIP(cfg.NodeIP)
	certFile, keyFile := cfg.TLSCertFile, cfg.TLSKeyFile
	var rotating *bootstrap.Rotator
	if certFile == "" {
		certFile, keyFile, rotating = a.servingCertificate(ctx, n.kube, nodeIP)
	}
	var getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	if rotating != nil {
		run.Go("serving certificate rotation", rotating.Run)
		getCert = rotating.GetCertificate
	}
	// As the kubelet's --authentication-token-webhook and
	// --authorization-mode=Webhook: the apiserver reviews tokens and
	// decides every request.
	authz, err := kubeletapi.WebhookAuthorizer(n.kube.AuthorizationV1())
	if err != nil {
		return err
	}
	api, err := kubeletapi.New(kubeletapi.Config{
		Address:  net.JoinHostPort(cfg.KubeletAddress, strconv.Itoa(cfg.KubeletPort)),
		CertFile: certFile, KeyFile: keyFile, GetCertificate: getCert, RootDir: cfg.RootDir,
		NodeName: cfg.NodeName, Addresses: []net.IP{nodeIP}, ClientCAFile: caFile,
		TokenReviews: n.kube.AuthenticationV1(), Authorizer: authz,
		Pods: p.statuses.List, Locator: kubeletapi.CRILocator{Runtime: n.client}, Runtime: n.client,
		PodLogDir: cfg.PodLogDir, Healthy: a.healthy, Metrics: n.registry, Logger: cfg.Logger,
		Stats: p.usage,
	})
	if err != nil {
		return err
	}
	cfg.Logger.Info("serving the agent API", "port", cfg.KubeletPort, "cert", certFile)
	return api.Run(ctx)
}

// collectOrphanVolumes tears down the volumes of pods not in active that
// were already suspects at the previous check, and returns the new suspects.
func (a *Agent) collectOrphanVolumes(ctx context.Context, vols *volumes.Manager, active []types.UID, suspects map[types.UID]bool) map[types.UID]bool {
	log := a.cfg.Logger
	onDisk, err := vols.Reconstruct(ctx)
	if err != nil {
		log.Warn("listing pod volumes failed", "err", err)
		return suspects
	}
	isActive := make(map[types.UID]bool, len(active))
	for _, uid := range active {
		isActive[uid] = true
	}
	next := map[types.UID]bool{}
	keep := active
	for _, pv := range onDisk {
		switch {
		case isActive[pv.UID]:
		case suspects[pv.UID]:
			continue // orphaned twice in a row: not kept
		default:
			next[pv.UID] = true
		}
		keep = append(keep, pv.UID)
	}
	cleaned, err := vols.CleanupOrphans(ctx, keep)
	if err != nil {
		log.Warn("cleaning up orphaned pod volumes failed", "err", err)
	}
	if len(cleaned) > 0 {
		log.Info("removed orphaned pod volumes", "uids", cleaned)
	}
	return next
}

// watchRuntime polls the runtime's Status for the readiness of the runtime
// and of its pod network (every second until both are ready, then every 5 s),
// logging changes.
func (a *Agent) watchRuntime(ctx context.Context, client *cri.Client) {
	log := a.cfg.Logger
	var lastRuntime, lastNetwork string
	for {
		runtimeErr, networkErr := runtimeConditions(ctx, client)
		a.mu.Lock()
		a.runtimeErr, a.criNetworkErr = runtimeErr, networkErr
		a.mu.Unlock()
		if s := errString(runtimeErr); s != lastRuntime {
			log.Info("container runtime readiness", "ready", runtimeErr == nil, "err", runtimeErr)
			lastRuntime = s
		}
		if s := errString(networkErr); s != lastNetwork {
			log.Info("runtime network readiness", "ready", networkErr == nil, "err", networkErr)
			lastNetwork = s
		}
		period := 5 * time.Second
		if runtimeErr != nil || networkErr != nil {
			period = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(period):
		}
	}
}

// runtimeConditions reads the runtime's RuntimeReady and NetworkReady
// conditions, as errors saying why they are false.
func runtimeConditions(ctx context.Context, client *cri.Client) (runtimeErr, networkErr error) {
	resp, err := client.Status(ctx, false)
	if err != nil {
		return err, err
	}
	for _, c := range resp.GetStatus().GetConditions() {
		if c.GetStatus() {
			continue
		}
		err := fmt.Errorf("%s is false: %s: %s", c.GetType(), c.GetReason(), c.GetMessage())
		switch c.GetType() {
		case runtimeapi.RuntimeReady:
			runtimeErr = err
		case runtimeapi.NetworkReady:
			networkErr = err
		}
	}
	return runtimeErr, networkErr
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// waitNetwork waits up to timeout for the runtime to report its network
// ready (containerd loads a new conflist within moments), so the first pods
// do not find it unready.
func waitNetwork(ctx context.Context, client *cri.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := runtimeConditions(ctx, client)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (a *Agent) setNetwork(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.networkErr = err
}

// networkReady reports why pods cannot get a network yet: the agent's CNI
// check failed, or the runtime reports its network not ready.
func (a *Agent) networkReady() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.networkErr != nil {
		return a.networkErr
	}
	return a.criNetworkErr
}

func (a *Agent) healthy() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runtimeErr
}

// memoryCapacity is the node's memory (MemTotal) in bytes.
func memoryCapacity() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo MemTotal: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("/proc/meminfo has no MemTotal")
}

// cgroupV2 reports a node on the unified hierarchy only.
func cgroupV2() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// kernelRelease is the running kernel's release (empty when unknown).
func kernelRelease() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}
