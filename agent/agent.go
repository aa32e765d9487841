// Package agent is berth's node agent, composed: it runs the pods of a
// static-pod manifest directory on a CRI runtime the way the kubelet does,
// and, joined to a control plane (Config.Server or Config.Kubeconfig), the
// pods the apiserver binds to its node.
//
//	manifest source ──┐                            ┌──▶ status manager ──▶ GET /pods
//	apiserver source ─┴─ADD/REMOVE──▶ pod workers ─┤         │
//	 (spec.nodeName)                   ▲    │      │         └──▶ status sync ──▶ pods/status
//	                   PLEG (relist) ──┘    CRI    └──▶ Events (client-go recorder)
//
// At start it connects to the runtime; joined, it registers its Node (lease,
// status) and, without Config.PodCIDR, waits for the Node's spec.podCIDR;
// then it writes and checks the node's CNI configuration, adopts the pods
// already running (by their kubelet labels), and removes the ones no source
// asks for any more once every source delivered its first list. Joined, it
// also keeps mirror pods for its static pods, completes graceful deletions
// (stop with the pod's grace, then delete with grace 0, precondition UID),
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
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/backoff"
	"berth/agent/bootstrap"
	"berth/agent/cgroups"
	"berth/agent/containerconfig"
	agentcsi "berth/agent/csi"
	"berth/agent/dns"
	"berth/agent/envsource"
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
	apisource "berth/agent/source/apiserver"
	"berth/agent/source/manifest"
	"berth/agent/status"
	"berth/agent/statussync"
	"berth/agent/sysctl"
	"berth/agent/volumes"
	"berth/cni"
	"berth/cri"
	"berth/probes"
)

// Agent is a configured node agent; Run runs it.
type Agent struct {
	cfg Config

	mu            sync.Mutex
	networkErr    error // why the node's CNI config does not work; nil when it does
	criNetworkErr error // why the runtime reports its network not ready
	runtimeErr    error // why the runtime is not ready; nil when it is
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
	log := cfg.Logger
	for _, dir := range []string{cfg.RootDir, cfg.PodLogDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	// One registry for everything that records metrics, served on the
	// read-only port's and the agent API's /metrics.
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	met, err := metrics.New(registry, cfg.NodeName)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	client, err := cri.New(ctx, cri.Config{Endpoint: cfg.RuntimeEndpoint, UnaryInterceptors: []grpc.UnaryClientInterceptor{met.RuntimeInterceptor()}})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	defer client.Close()
	version := client.RuntimeVersion()
	log.Info("connected to the container runtime", "runtime", version.GetRuntimeName(), "version", version.GetRuntimeVersion())

	run := newSupervisor(ctx)
	defer run.Stop() // on an early return
	var kube kubernetes.Interface
	var restCfg *rest.Config
	podCIDR := cfg.PodCIDR
	if cfg.Joined() {
		if restCfg, err = cfg.restConfig(); err != nil {
			return err
		}
		if kube, err = kubernetes.NewForConfig(restCfg); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		if kube, err = a.nodeCredential(ctx, run, restCfg, kube); err != nil {
			return err
		}
		cidrs := make(chan []string, 1)
		nodes, err := node.New(node.Config{
			Client: kube, NodeName: cfg.NodeName, InternalIP: net.ParseIP(cfg.NodeIP), Runtime: client, RootDir: cfg.RootDir,
			KubeletPort: int32(cfg.KubeletPort), Logger: log,
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
		if podCIDR == "" {
			log.Info("waiting for the Node's spec.podCIDR")
			select {
			case c := <-cidrs:
				podCIDR = c[0]
			case <-ctx.Done():
				return run.Wait()
			}
		}
	}

	if kube != nil && !cfg.DisableServiceProxy {
		proxier, err := a.serviceProxy(kube, podCIDR, registry)
		if err != nil {
			return err
		}
		log.Info("running the service proxy", "table", cfg.ProxyTable)
		run.Go("service proxy", proxier.Run)
	}

	netCfg := cni.Config{
		NetworkName: cfg.CNINetworkName, BridgeName: cfg.CNIBridge, PodCIDRs: []string{podCIDR},
		BinDirs: cfg.CNIBinDirs, ConfDir: cfg.CNIConfDir, DataDir: filepath.Join(cfg.RootDir, "cni", "networks"),
	}
	path, err := cni.Write(netCfg)
	if err != nil {
		return fmt.Errorf("agent: writing the CNI config: %w", err)
	}
	log.Info("wrote the node's CNI config", "path", path, "bridge", cfg.CNIBridge, "podCIDR", podCIDR)
	if err := cni.Check(ctx, netCfg); err != nil {
		log.Error("the CNI config does not work on this node; pods needing the pod network wait", "err", err)
		a.setNetwork(fmt.Errorf("CNI check: %w", err))
	}
	if err := waitNetwork(ctx, client, 10*time.Second); err != nil {
		log.Warn("the runtime's pod network is not ready yet; pods needing it wait", "err", err)
	}

	mounts, err := cgroups.Mountpoints("/proc/self/mountinfo")
	if err != nil {
		log.Warn("cannot list cgroup hierarchies; pod cgroups will not be removed", "err", err)
	}
	memory, err := memoryCapacity()
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	puller, err := images.NewPuller(images.Config{Images: client, InitialBackOff: cfg.ImageBackOffInitial, MaxBackOff: cfg.ImageBackOffMax})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	// Unset limits read as the node's allocatable in the downward API.
	allocatable, err := node.MachineAllocatable(cfg.RootDir)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	volCfg := volumes.Config{RootDir: cfg.RootDir, Logger: log, NodeAllocatable: allocatable}
	var pullCreds func(context.Context, *v1.Pod, string) []*runtimeapi.AuthConfig
	var envCfg envsource.Config // standalone: no objects, no services
	var recorder probes.EventRecorder
	if kube != nil {
		events := record.NewBroadcaster(record.WithContext(ctx))
		events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
		defer events.Shutdown()
		recorder = events.NewRecorder(kubescheme.Scheme, v1.EventSource{Component: "kubelet", Host: cfg.NodeName})
		objects, err := volumes.NewClientSource(kube)
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		// The same client also asks the TokenRequest API for projected
		// service-account tokens.
		volCfg.Objects, volCfg.Claims, volCfg.Tokens, volCfg.Recorder = objects, objects, objects, recorder
		pullCreds = pullCredentials(kube, log)
		services := envsource.NewServiceCache(kube)
		run.Go("services", services.Run)
		envCfg = envsource.Config{Objects: objects, Services: services}
	}
	// CSI drivers register through <root-dir>/plugins_registry (agent/csi).
	csiPlugins, err := agentcsi.New(agentcsi.Config{RootDir: cfg.RootDir, NodeName: cfg.NodeName, Client: kube, Registerer: registry, Logger: log})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	run.Go("csi plugins", csiPlugins.Run)
	volCfg.CSI, volCfg.MountBackOffInitial, volCfg.MountBackOffMax = csiPlugins, volumes.DefaultMountBackOffInitial, volumes.DefaultMountBackOffMax
	vols, err := volumes.New(volCfg)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	statuses := status.NewManager()
	crashBackOff := backoff.New(cfg.ContainerBackOff)
	cache := podruntime.NewCache(podruntime.New(client))
	nodeIP := net.ParseIP(cfg.NodeIP)
	probeHTTP := probes.NewHTTPGetter() // shared by probes and hooks
	prober, err := probes.New(probes.Config{Exec: client, HTTP: probeHTTP, Recorder: recorder, Registerer: registry, Logger: log})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	hooks, err := probes.NewHookRunner(probes.HookConfig{Exec: client, HTTP: probeHTTP, Recorder: recorder, Logger: log})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	sysctls, err := sysctl.NewAllowlist(append(sysctl.Safe(kernelRelease()), cfg.AllowedUnsafeSysctls...))
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	var runtimeHandler func(*v1.Pod) (string, error)
	if kube != nil {
		classes, err := runtimeclass.New(kube)
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		run.Go("runtime classes", classes.Run)
		runtimeHandler = classes.Handler
	}
	workers, err := podworker.New(podworker.Config{
		CRI: client, Cache: cache, Status: statuses, BackOff: crashBackOff,
		Images: puller, Volumes: vols, Probes: prober, Hooks: hooks,
		SandboxOptions: sandboxconfig.Options{PodLogDir: cfg.PodLogDir, CgroupRoot: cfg.CgroupRoot, DNS: dns.Options{
			ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain, ResolvConf: cfg.ResolvConf, NodeIPs: []net.IP{nodeIP},
		}},
		ContainerOptions: containerconfig.Options{
			NodeName: cfg.NodeName, HostIPs: []string{cfg.NodeIP}, MemoryCapacity: memory, CgroupV2: cgroupV2(),
			NodeAllocatable: allocatable,
		},
		Env:          envsource.New(envCfg),
		Admit:        sysctls.Admit,
		NetworkReady: a.networkReady,
		PodCleanup: func(uid types.UID, _ *v1.Pod) error {
			return cgroups.RemovePod(mounts, cfg.CgroupRoot, uid)
		},
		RootDir:         cfg.RootDir,
		RuntimeName:     version.GetRuntimeName(),
		HostIP:          cfg.NodeIP,
		QOSClass:        qos.Class,
		MaxStarts:       cfg.MaxParallelStarts,
		PullCredentials: pullCreds,
		Recorder:        recorder,
		Metrics:         met,
		Logger:          log,

		PodRuntimeHandler: runtimeHandler, // each pod's RuntimeClass's
	})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	// The PLEG removes the runtime's pods no source asks for, once every
	// source has delivered its first list.
	sources := 0                         // sources yet to deliver their first list
	sourceDone := make(chan struct{}, 2) // one send per source once synced
	sourceSynced := make(chan struct{})
	var src *manifest.Source
	var synced sync.Once
	if cfg.PodManifestPath != "" {
		if src, err = manifest.New(manifest.Config{Dir: cfg.PodManifestPath, NodeName: cfg.NodeName, Rescan: cfg.ManifestRescan, Logger: log}); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		sources++
	}
	var apiSrc *apisource.Source
	var mirrors *mirror.Manager // nil when standalone
	if kube != nil {
		handler := newAPIPods(workers, kube, log)
		if apiSrc, err = apisource.New(apisource.Config{Client: kube, NodeName: cfg.NodeName, Handler: handler, Logger: log}); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		syncer, err := statussync.New(statussync.Config{Client: kube, Status: statuses, Pods: apiSrc.Lister(), Metrics: met, Logger: log})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		if src != nil {
			if mirrors, err = mirror.New(mirror.Config{Client: kube, NodeName: cfg.NodeName, Pods: apiSrc.Lister(), Logger: log}); err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			run.Go("mirror pods", mirrors.Run)
		}
		sources++
		run.Go("apiserver pod source", apiSrc.Run)
		run.Go("apiserver source synced", func(ctx context.Context) error {
			for !apiSrc.HasSynced() {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(50 * time.Millisecond):
				}
			}
			sourceDone <- struct{}{}
			return nil
		})
		run.Go("pod status sync", syncer.Run)
		run.Go("volume resync", func(ctx context.Context) error {
			return vols.RunResync(ctx, volumes.DefaultResyncPeriod, volumes.ListedPods(apiSrc.Lister()))
		})
	}
	run.Go("sources synced", func(ctx context.Context) error {
		for range sources {
			select {
			case <-sourceDone:
			case <-ctx.Done():
				return nil
			}
		}
		close(sourceSynced)
		return nil
	})
	var lastVolumeGC time.Time
	var suspects map[types.UID]bool
	detector, err := pleg.New(pleg.Config{
		Cache: cache, CRI: client, Period: cfg.RelistPeriod, Metrics: met, Logger: log,
		Changed: workers.Wake,
		Relisted: func(pods map[types.UID]*podstate.Pod) {
			select {
			case <-sourceSynced:
			default:
				return // until the manifests are read, every pod may be wanted
			}
			active := make([]types.UID, 0, len(pods))
			for uid, p := range pods {
				active = append(active, uid)
				if !workers.Known(uid) {
					log.Info("removing a pod no source asks for", "pod", p.Namespace+"/"+p.Name, "uid", uid)
					workers.RemoveOrphan(uid)
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
			suspects = a.collectOrphanVolumes(ctx, vols, append(active, workers.UIDs()...), suspects)
		},
	})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}

	run.Go("pod workers", workers.Run)
	if src != nil {
		run.Go("manifest source", src.Run)
		run.Go("pod events", func(ctx context.Context) error {
			for ev := range src.Events() {
				switch ev.Op {
				case manifest.Add:
					log.Info("pod added", "pod", ev.Pod.Namespace+"/"+ev.Pod.Name, "uid", ev.Pod.UID, "file", ev.File)
					workers.Update(ev.Pod)
					if mirrors != nil {
						mirrors.Set(ev.Pod)
					}
				case manifest.Remove:
					log.Info("pod removed", "pod", ev.Pod.Namespace+"/"+ev.Pod.Name, "uid", ev.Pod.UID, "file", ev.File)
					workers.Remove(ev.Pod.UID)
					if mirrors != nil {
						mirrors.Unset(ev.Pod.UID)
					}
				case manifest.Synced:
					synced.Do(func() { sourceDone <- struct{}{} })
				}
			}
			return nil
		})
	}
	run.Go("pleg", detector.Run)
	run.Go("runtime status", func(ctx context.Context) error { a.watchRuntime(ctx, client); return nil })
	run.Go("back-off gc", func(ctx context.Context) error {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case now := <-t.C:
				crashBackOff.GC(now)
			}
		}
	})
	if cfg.ReadOnlyPort != 0 {
		lis, err := net.Listen("tcp", net.JoinHostPort(cfg.ReadOnlyAddress, strconv.Itoa(cfg.ReadOnlyPort)))
		if err != nil {
			return fmt.Errorf("agent: read-only port: %w", err)
		}
		srv, err := server.New(server.Config{Listener: lis, Pods: statuses.List, Healthy: a.healthy, Metrics: registry, Logger: log})
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		log.Info("serving the read-only API", "addr", lis.Addr().String())
		run.Go("read-only API", srv.Run)
	}
	if restCfg != nil {
		caFile, err := cfg.clientCAFile(restCfg)
		if err != nil {
			return err
		}
		run.Go("agent API", func(ctx context.Context) error {
			certFile, keyFile := cfg.TLSCertFile, cfg.TLSKeyFile
			var rotating *bootstrap.Rotator
			if certFile == "" {
				certFile, keyFile, rotating = a.servingCertificate(ctx, kube, nodeIP)
			}
			var getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)
			if rotating != nil {
				run.Go("serving certificate rotation", rotating.Run)
				getCert = rotating.GetCertificate
			}
			api, err := kubeletapi.New(kubeletapi.Config{
				Address:  net.JoinHostPort(cfg.KubeletAddress, strconv.Itoa(cfg.KubeletPort)),
				CertFile: certFile, KeyFile: keyFile, GetCertificate: getCert, RootDir: cfg.RootDir,
				NodeName: cfg.NodeName, Addresses: []net.IP{nodeIP}, ClientCAFile: caFile,
				Pods: statuses.List, Locator: kubeletapi.CRILocator{Runtime: client}, Runtime: client,
				PodLogDir: cfg.PodLogDir, Healthy: a.healthy, Metrics: registry, Logger: log,
			})
			if err != nil {
				return err
			}
			log.Info("serving the agent API", "port", cfg.KubeletPort, "cert", certFile)
			return api.Run(ctx)
		})
	}
	return run.Wait()
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
