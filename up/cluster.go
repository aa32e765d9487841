package up

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"berth/agent"
	"berth/agent/imagegc"
	"berth/agent/kubeletconfig"
	"berth/agent/node"
	"berth/controlplane/controller/nodeipam"
	"berth/controlplane/pki"
	"berth/controlplane/server"
	"berth/cri"
	"berth/internal/containerd"
	"berth/internal/errdefs"
	"berth/internal/supervisor"
	"berth/internal/testimages"
)

// Cluster is a configured single-node cluster; Run runs it.
type Cluster struct {
	cfg Config
}

// New validates cfg.
func New(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Cluster{cfg: cfg}, nil
}

// Config returns the configuration with the defaults applied.
func (c *Cluster) Config() Config { return c.cfg }

// startTimeout bounds waiting for each component to come up.
const startTimeout = 2 * time.Minute

// Run brings the cluster up (containerd, control plane, the joined agent —
// in that order), calls OnReady once the agent's Node is Ready, and runs it
// until ctx ends or a component fails;
// then it stops everything in reverse order (see the package doc) and
// returns the first failure, nil after a clean stop.
func (c *Cluster) Run(ctx context.Context) (err error) {
	cfg := c.cfg
	log := cfg.Logger
	for _, d := range []string{cfg.DataDir, cfg.ManifestDir(), cfg.CNIConfDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	sup := supervisor.New(ctx, supervisor.Config{Order: supervisor.Reverse, MustRun: true, Logger: log})
	var cleanups []func() error
	defer func() {
		// Components stop in reverse order, then the host cleanup runs.
		stopErr := sup.Stop()
		for i := len(cleanups) - 1; i >= 0; i-- {
			stopErr = errors.Join(stopErr, cleanups[i]())
		}
		err = errors.Join(err, stopErr)
	}()

	info := Info{ManifestDir: cfg.ManifestDir(), RuntimeEndpoint: cfg.RuntimeEndpoint}
	if cfg.RuntimeEndpoint == "" {
		ctd, sandboxImage, closeRegistry, err := c.startContainerd(ctx, sup, func() {
			// Once berth's containerd runs: after it stopped (cleanups run
			// after the supervisor), unmount and delete the bridge.
			cleanups = append(cleanups, func() error { return HostCleanup(cfg.DataDir, cfg.CNIBridge) })
		})
		if closeRegistry != nil {
			cleanups = append(cleanups, closeRegistry)
		}
		if err != nil {
			return err
		}
		info.RuntimeEndpoint, info.OwnContainerd, info.SandboxImage = ctd.Endpoint(), true, sandboxImage
		// Runs before containerd stops: registered as a stop hook just
		// above containerd in the supervisor's stack.
		sup.OnStop(func() error { return RemoveAllPods(ctd.Endpoint()) })
	}

	// nodeipam hands the single node exactly PodCIDR.
	podNet := netip.MustParsePrefix(cfg.PodCIDR)
	srv, err := server.New(server.Config{
		DataDir: cfg.DataDir, Listen: cfg.Listen, EncryptionProviderConfig: cfg.EncryptionProviderConfig,
		Profiling:             cfg.Profiling,
		NodeIPAM:              nodeipam.Options{ClusterCIDR: cfg.PodCIDR, NodeCIDRMaskSize: podNet.Bits()},
		ServiceClusterIPRange: cfg.ServiceClusterIPRange, ServiceNodePortRange: cfg.ServiceNodePortRange,
		Logger: log.With("component", "server"),
	})
	if err != nil {
		return err
	}
	// A listen-address left by a run that was killed would be read as this
	// run's before the server removes it: remove it first.
	addrFile := filepath.Join(cfg.DataDir, server.ListenAddressFile)
	if err := os.Remove(addrFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cluster: %w", err)
	}
	serverDone := sup.Go("server", srv.Run)
	addr, err := waitFile(ctx, addrFile, serverDone)
	if err != nil {
		select {
		case <-serverDone:
			return startFailed(sup, "the control plane stopped while starting")
		default:
		}
		return fmt.Errorf("cluster: control plane: %w", err)
	}
	info.Server = addr
	info.Kubeconfig = filepath.Join(cfg.DataDir, pki.KubeconfigFile)
	info.NodeName, info.PodCIDR = cfg.NodeName, cfg.PodCIDR
	if err := checkNodePodCIDR(ctx, info.Kubeconfig, cfg.NodeName, cfg.PodCIDR); err != nil {
		return err
	}

	dnsAddr := clusterDNSAddr(cfg.PodCIDR)
	if err := startClusterDNS(sup, info.Kubeconfig, cfg.ResolvConf, dnsAddr, log); err != nil {
		return err
	}
	acfg, err := agentConfig(&cfg, addr, info.RuntimeEndpoint, []net.IP{dnsAddr.Addr().AsSlice()})
	if err != nil {
		return err
	}
	ag, err := agent.New(acfg)
	if err != nil {
		return err
	}
	agentDone := sup.Go("agent", ag.Run)
	if err := startLocalStorage(ctx, sup, cfg.DataDir, cfg.NodeName, info.Kubeconfig, log); err != nil {
		return err
	}
	if err := waitNodeReady(ctx, info.Kubeconfig, cfg.NodeName, agentDone); err != nil {
		select {
		case <-agentDone:
			return startFailed(sup, "the agent stopped while starting")
		default:
		}
		if ctx.Err() != nil {
			return nil // stopped while starting: a clean stop
		}
		return fmt.Errorf("cluster: %w", err)
	}
	if !cfg.DisableIngress {
		if info.IngressHTTP, info.IngressHTTPS, err = startIngress(ctx, sup, cfg, addr, info.Kubeconfig, log); err != nil {
			return err
		}
	}
	if cfg.OnReady != nil {
		cfg.OnReady(info)
	}
	return sup.Wait()
}

// startFailed is the failure that ended a component while the cluster was
// starting (the first one), or msg.
func startFailed(sup *supervisor.Supervisor, msg string) error {
	if err := sup.Err(); err != nil {
		return err
	}
	return fmt.Errorf("cluster: %s: %w", msg, errdefs.ErrUnavailable)
}

// startContainerd builds and serves the pause image, then starts berth's
// containerd and waits until it can pull that image.
// started is called once containerd has been started.
func (c *Cluster) startContainerd(ctx context.Context, sup *supervisor.Supervisor, started func()) (*containerd.Containerd, string, func() error, error) {
	cfg := c.cfg
	log := cfg.Logger
	bin, err := os.ReadFile(cfg.PauseBinary)
	if err != nil {
		return nil, "", nil, fmt.Errorf("cluster: pause binary (build it with CGO_ENABLED=0 go build -o %s ./cmd/pause, or give --pause-binary): %w", cfg.PauseBinary, err)
	}
	img, err := testimages.PauseImage(bin)
	if err != nil {
		return nil, "", nil, fmt.Errorf("cluster: pause image from %s: %w", cfg.PauseBinary, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, "", nil, fmt.Errorf("cluster: pause image: %w", err)
	}
	// The tag follows the content, so a new pause binary is a new image
	// while restarts (a new registry port each time) reuse the pulled one.
	tag := digest.Hex[:12]
	reg, err := testimages.StartRegistry(testimages.RegistryConfig{})
	if err != nil {
		return nil, "", nil, fmt.Errorf("cluster: pause image registry: %w", err)
	}
	if _, err := reg.Push(ctx, PauseRepository+":"+tag, img); err != nil {
		return nil, "", reg.Close, fmt.Errorf("cluster: pause image: %w", err)
	}
	sandboxImage := PauseRegistryHost + "/" + PauseRepository + ":" + tag

	regs := cfg.Registries
	regs.Mirrors = map[string]containerd.Mirror{PauseRegistryHost: {Endpoints: []string{"http://" + reg.Host()}}}
	for k, v := range cfg.Registries.Mirrors {
		regs.Mirrors[k] = v
	}
	ctd, err := containerd.New(containerd.Config{
		Binary:       cfg.ContainerdBinary,
		Dir:          filepath.Join(cfg.DataDir, "containerd"),
		CNIConfDir:   cfg.CNIConfDir,
		CNIBinDir:    cfg.CNIBinDir,
		SandboxImage: sandboxImage,
		Registries:   regs,
		Logger:       log.With("component", "containerd"),
	})
	if err != nil {
		return nil, "", reg.Close, err
	}
	done := sup.Go("containerd", ctd.Run)
	started()
	select {
	case <-ctd.Ready():
	case <-done:
		return nil, "", reg.Close, startFailed(sup, "containerd stopped while starting")
	case <-ctx.Done():
		return nil, "", reg.Close, ctx.Err()
	}
	client, err := cri.New(ctx, cri.Config{Endpoint: ctd.Endpoint()})
	if err != nil {
		return nil, "", reg.Close, fmt.Errorf("cluster: %w", err)
	}
	defer client.Close()
	pullCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if _, err := client.PullImage(pullCtx, sandboxImage, nil, nil); err != nil {
		return nil, "", reg.Close, fmt.Errorf("cluster: pulling the pause image from the local registry: %w", err)
	}
	log.Info("containerd ready with the pause image", "endpoint", ctd.Endpoint(), "version", ctd.Version(), "sandboxImage", sandboxImage)
	return ctd, sandboxImage, reg.Close, nil
}

// waitFile polls until path exists and returns its trimmed content, or
// fails when done closes (the component ended) or startTimeout passes.
func waitFile(ctx context.Context, path string, done <-chan struct{}) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return strings.TrimSpace(string(b)), nil
		}
		select {
		case <-done:
			return "", fmt.Errorf("stopped before writing %s: %w", path, errdefs.ErrUnavailable)
		case <-ctx.Done():
			return "", fmt.Errorf("no %s after %s: %w", path, startTimeout, ctx.Err())
		case <-tick.C:
		}
	}
}

// LockFile, in the data dir, is held (flock) while a cluster runs on it.
const LockFile = "berth-up.lock"

// lockDataDir takes the data dir's lock, so two clusters never share (and
// clean up) one data dir; the kernel drops it if the process dies.
func lockDataDir(dir string) (func(), error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("cluster: another berth up runs on %s (it holds %s): %w", dir, path, errdefs.ErrAlreadyExists)
		}
		return nil, fmt.Errorf("cluster: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// agentConfig is the agent's Config in the cluster whose apiserver is at
// addr: berth up's wiring, its defaults, and cfg.KubeletConfig's fields
// over the defaults. The file's warnings are logged.
func agentConfig(cfg *Config, addr, runtimeEndpoint string, clusterDNS []net.IP) (agent.Config, error) {
	acfg := agent.Config{
		Server:          "https://" + addr,
		TokenFile:       filepath.Join(cfg.DataDir, pki.AgentTokenFile),
		CAFile:          filepath.Join(cfg.DataDir, pki.CAFile),
		KubeletPort:     cfg.KubeletPort,
		PodManifestPath: cfg.ManifestDir(),
		RuntimeEndpoint: runtimeEndpoint,
		RootDir:         filepath.Join(cfg.DataDir, "agent"),
		// The Node's spec.podCIDR is cfg.PodCIDR (nodeipam hands out
		// exactly it; checkNodePodCIDR refused any other): given here, the
		// agent writes its CNI config at once instead of learning the
		// CIDR from its next status sync, up to 10 s after registering,
		// while the node already reports Ready.
		PodCIDR:         cfg.PodCIDR,
		CNIConfDir:      cfg.CNIConfDir,
		CNIBinDirs:      []string{cfg.CNIBinDir},
		CNIBridge:       cfg.CNIBridge,
		ClusterDNS:      clusterDNS,
		ResolvConf:      cfg.ResolvConf,
		NodeName:        cfg.NodeName,
		ReadOnlyAddress: cfg.ReadOnlyAddress,
		ReadOnlyPort:    cfg.ReadOnlyPort,
		// As kind for a node on a developer's machine: no disk thresholds
		// (a full laptop disk would taint the node and evict its pods),
		// the kubelet's memory one.
		EvictionHard:  node.Thresholds{node.SignalMemoryAvailable: node.DefaultEvictionHard()[node.SignalMemoryAvailable]},
		ImageGCPolicy: imagegc.DefaultPolicy(),
		// berth up stops the whole node: nothing of it stays in nftables.
		ProxyCleanupOnExit: true,
		Logger:             cfg.Logger.With("component", "agent"),
	}
	if cfg.KubeletConfig == "" {
		return acfg, nil
	}
	file, err := kubeletconfig.Load(cfg.KubeletConfig)
	if err != nil {
		return acfg, err
	}
	owned := map[string]bool{
		"pod-manifest-path": true, "container-runtime-endpoint": true, "pod-cidr": true, "cluster-dns": true,
		"kubelet-port": true, "read-only-port": true, "kubelet-address": true, "resolv-conf": true,
	}
	warnings, err := file.Apply(&acfg, func(flag string) bool { return owned[flag] })
	if err != nil {
		return acfg, err
	}
	if addr != "" { // once, when the agent is made
		for _, w := range warnings {
			acfg.Logger.Warn(w)
		}
	}
	return acfg, nil
}
