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
	// Components stop in reverse order, the host cleanup at its place.
	sup := supervisor.New(ctx, supervisor.Config{Order: supervisor.Reverse, MustRun: true, Logger: cfg.Logger})
	defer func() { err = errors.Join(err, sup.Stop()) }()

	info := Info{ManifestDir: cfg.ManifestDir(), RuntimeEndpoint: cfg.RuntimeEndpoint,
		Kubeconfig: filepath.Join(cfg.DataDir, pki.KubeconfigFile), NodeName: cfg.NodeName, PodCIDR: cfg.PodCIDR}
	if cfg.RuntimeEndpoint == "" {
		if err := c.startContainerd(ctx, sup, &info); err != nil {
			return err
		}
	}
	if info.Server, err = c.startControlPlane(ctx, sup); err != nil {
		return err
	}
	if err := checkNodePodCIDR(ctx, info.Kubeconfig, cfg.NodeName, cfg.PodCIDR); err != nil {
		return err
	}
	if err := c.startNode(ctx, sup, info); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil // stopped while starting: a clean stop
	}
	if !cfg.DisableIngress {
		if info.IngressHTTP, info.IngressHTTPS, err = startIngress(ctx, sup, cfg, info.Server, info.Kubeconfig, cfg.Logger); err != nil {
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

// startContainerd serves the pause image, then starts berth's containerd
// and waits until it can pull that image. Stopping the cluster removes every
// pod before containerd stops, and once it stopped, unmounts what is left
// under the data dir and deletes the bridge.
func (c *Cluster) startContainerd(ctx context.Context, sup *supervisor.Supervisor, info *Info) error {
	cfg := c.cfg
	sandboxImage, registry, err := servePauseImage(ctx, sup, cfg.PauseBinary)
	if err != nil {
		return err
	}
	regs := cfg.Registries
	regs.Mirrors = map[string]containerd.Mirror{PauseRegistryHost: {Endpoints: []string{"http://" + registry}}}
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
		Logger:       cfg.Logger.With("component", "containerd"),
	})
	if err != nil {
		return err
	}
	sup.OnStop(func() error { return HostCleanup(cfg.DataDir, cfg.CNIBridge) })
	done := sup.Go("containerd", ctd.Run)
	select {
	case <-ctd.Ready():
	case <-done:
		return startFailed(sup, "containerd stopped while starting")
	case <-ctx.Done():
		return ctx.Err()
	}
	client, err := cri.New(ctx, cri.Config{Endpoint: ctd.Endpoint()})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	defer client.Close()
	pullCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if _, err := client.PullImage(pullCtx, sandboxImage, nil, nil); err != nil {
		return fmt.Errorf("cluster: pulling the pause image from the local registry: %w", err)
	}
	cfg.Logger.Info("containerd ready with the pause image", "endpoint", ctd.Endpoint(), "version", ctd.Version(), "sandboxImage", sandboxImage)
	// Runs before containerd stops: nothing was started since containerd.
	sup.OnStop(func() error { return RemoveAllPods(ctd.Endpoint()) })
	info.RuntimeEndpoint, info.OwnContainerd, info.SandboxImage = ctd.Endpoint(), true, sandboxImage
	return nil
}

// servePauseImage builds the pause image from the pause binary and serves it
// from a registry on 127.0.0.1 (closed when the cluster stopped); it returns
// the image's name and the registry's host:port.
func servePauseImage(ctx context.Context, sup *supervisor.Supervisor, pauseBinary string) (string, string, error) {
	bin, err := os.ReadFile(pauseBinary)
	if err != nil {
		return "", "", fmt.Errorf("cluster: pause binary (build it with CGO_ENABLED=0 go build -o %s ./cmd/pause, or give --pause-binary): %w", pauseBinary, err)
	}
	img, err := testimages.PauseImage(bin)
	if err != nil {
		return "", "", fmt.Errorf("cluster: pause image from %s: %w", pauseBinary, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", "", fmt.Errorf("cluster: pause image: %w", err)
	}
	// The tag follows the content, so a new pause binary is a new image
	// while restarts (a new registry port each time) reuse the pulled one.
	tag := digest.Hex[:12]
	reg, err := testimages.StartRegistry(testimages.RegistryConfig{})
	if err != nil {
		return "", "", fmt.Errorf("cluster: pause image registry: %w", err)
	}
	sup.OnStop(reg.Close)
	if _, err := reg.Push(ctx, PauseRepository+":"+tag, img); err != nil {
		return "", "", fmt.Errorf("cluster: pause image: %w", err)
	}
	return PauseRegistryHost + "/" + PauseRepository + ":" + tag, reg.Host(), nil
}

// startControlPlane starts the server and returns the address it serves at,
// once it wrote it.
func (c *Cluster) startControlPlane(ctx context.Context, sup *supervisor.Supervisor) (string, error) {
	cfg := c.cfg
	// nodeipam hands the single node exactly PodCIDR.
	podNet := netip.MustParsePrefix(cfg.PodCIDR)
	srv, err := server.New(server.Config{
		DataDir: cfg.DataDir, Listen: cfg.Listen, EncryptionProviderConfig: cfg.EncryptionProviderConfig,
		Profiling: cfg.Profiling, EtcdCompactionInterval: cfg.EtcdCompactionInterval,
		NodeIPAM:              nodeipam.Options{ClusterCIDR: cfg.PodCIDR, NodeCIDRMaskSize: podNet.Bits()},
		ServiceClusterIPRange: cfg.ServiceClusterIPRange, ServiceNodePortRange: cfg.ServiceNodePortRange,
		Logger: cfg.Logger.With("component", "server"),
	})
	if err != nil {
		return "", err
	}
	// A listen-address left by a run that was killed would be read as this
	// run's before the server removes it: remove it first.
	addrFile := filepath.Join(cfg.DataDir, server.ListenAddressFile)
	if err := os.Remove(addrFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("cluster: %w", err)
	}
	serverDone := sup.Go("server", srv.Run)
	addr, err := waitFile(ctx, addrFile, serverDone)
	if err != nil {
		select {
		case <-serverDone:
			return "", startFailed(sup, "the control plane stopped while starting")
		default:
		}
		return "", fmt.Errorf("cluster: control plane: %w", err)
	}
	return addr, nil
}

// startNode starts the cluster DNS, the agent joined to the control plane at
// info.Server and the local storage, and waits until the Node is Ready
// (returning nil when ctx ended first).
func (c *Cluster) startNode(ctx context.Context, sup *supervisor.Supervisor, info Info) error {
	cfg := c.cfg
	dnsAddr := clusterDNSAddr(cfg.PodCIDR)
	if err := startClusterDNS(sup, info.Kubeconfig, cfg.ResolvConf, dnsAddr, cfg.Logger); err != nil {
		return err
	}
	acfg, err := agentConfig(&cfg, info.Server, info.RuntimeEndpoint, []net.IP{dnsAddr.Addr().AsSlice()})
	if err != nil {
		return err
	}
	ag, err := agent.New(acfg)
	if err != nil {
		return err
	}
	agentDone := sup.Go("agent", ag.Run)
	if err := startLocalStorage(ctx, sup, cfg.DataDir, cfg.NodeName, info.Kubeconfig, cfg.Logger); err != nil {
		return err
	}
	if err := waitNodeReady(ctx, info.Kubeconfig, cfg.NodeName, agentDone); err != nil {
		select {
		case <-agentDone:
			return startFailed(sup, "the agent stopped while starting")
		default:
		}
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
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
