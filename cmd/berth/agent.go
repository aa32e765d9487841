package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"berth/agent"
	"berth/agent/backoff"
	"berth/agent/imagegc"
	"berth/agent/kubeletconfig"
	"berth/agent/stats"
	"berth/internal/exepages"
)

// startupPagesDelay is how long after start the agent gives back the pages
// of the binary that only start-up used: by then every role's package
// initializers and the agent's own start have run.
const startupPagesDelay = 10 * time.Second

// releaseStartupPages gives back, once start-up is over, the executable's
// pages that only the initializers of the binary's other roles and the
// agent's start touched (see package exepages), and the heap they freed.
func releaseStartupPages(ctx context.Context, log *slog.Logger) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(startupPagesDelay):
	}
	// The heap the initializers of every role allocated is garbage by now:
	// return it to the system with the pages.
	debug.FreeOSMemory()
	r, err := exepages.Release()
	if err != nil {
		log.Warn("cannot give back the binary's start-up pages", "err", err)
		return
	}
	log.Info("gave back the binary's start-up pages", "residentBefore", r.RssBefore, "residentAfter", r.RssAfter)
}

// agentFlags are the flags of `berth agent`: most map straight onto cfg.
type agentFlags struct {
	cfg        agent.Config
	cniBinDirs string
	logLevel   string
	backOff    backoff.Policy
	configFile string
	node       nodeResourceFlags
}

// newAgentCommand maps the flags of `berth agent` onto agent.Config.
func newAgentCommand() *cobra.Command {
	var fl agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the node agent: static pods, and with --server the pods bound to this node, on containerd, as the kubelet does",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := fl.config(cmd)
			if err != nil {
				return err
			}
			a, err := agent.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			go releaseStartupPages(ctx, cfg.Logger)
			return a.Run(ctx)
		},
	}
	fl.register(cmd.Flags())
	return cmd
}

// config is the agent's configuration from the flags cmd was given (and
// the --config file's, under them).
func (fl *agentFlags) config(cmd *cobra.Command) (agent.Config, error) {
	cfg := fl.cfg
	logger, err := newLogger(cmd, fl.logLevel)
	if err != nil {
		return cfg, err
	}
	cfg.Logger = logger
	cfg.CNIBinDirs = strings.Split(fl.cniBinDirs, ":")
	changed := cmd.Flags().Changed
	if err := fl.node.apply(&cfg, changed); err != nil {
		return cfg, err
	}
	if fl.configFile != "" {
		// As the kubelet's --config: the flags given override it.
		file, err := kubeletconfig.Load(fl.configFile)
		if err != nil {
			return cfg, err
		}
		warnings, err := file.Apply(&cfg, changed)
		if err != nil {
			return cfg, err
		}
		for _, w := range warnings {
			cfg.Logger.Warn(w)
		}
	}
	if fl.backOff != (backoff.Policy{}) {
		cfg.ContainerBackOff = backoff.DefaultPolicy()
		if fl.backOff.Initial != 0 {
			cfg.ContainerBackOff.Initial = fl.backOff.Initial
		}
		if fl.backOff.Max != 0 {
			cfg.ContainerBackOff.Max = fl.backOff.Max
		}
	}
	return cfg, nil
}

// register defines the flags on f.
func (fl *agentFlags) register(f *pflag.FlagSet) {
	cfg := &fl.cfg
	f.StringVar(&cfg.PodManifestPath, "pod-manifest-path", "", "directory of static pod manifests (v1 Pod, YAML or JSON) to run; followed as files change (required unless --server or --kubeconfig)")
	f.StringVar(&cfg.RuntimeEndpoint, "container-runtime-endpoint", "", "CRI endpoint of the container runtime, e.g. unix:///run/containerd/containerd.sock (required)")
	f.StringVar(&cfg.RootDir, "root-dir", "", "directory for the agent's state (required)")
	f.StringVar(&cfg.PodCIDR, "pod-cidr", "", "the node's pod subnet, e.g. 10.88.0.0/16 (required unless joined: then default the Node's spec.podCIDR)")
	f.StringVar(&cfg.CNIConfDir, "cni-conf-dir", agent.DefaultCNIConfDir, "directory the node's CNI conflist is written to (the runtime's CNI conf dir)")
	f.StringVar(&fl.cniBinDirs, "cni-bin-dir", strings.Join(agent.DefaultCNIBinDirs, ":"), "colon-separated directories searched for CNI plugins")
	f.StringVar(&cfg.CNIBridge, "cni-bridge", agent.DefaultCNIBridge, "Linux bridge the pods attach to (distinct per agent on one machine)")
	f.StringVar(&cfg.PodLogDir, "pod-log-dir", agent.DefaultPodLogDir, "root of the pod log directories (<ns>_<name>_<uid>/<container>/<restart>.log)")
	f.StringVar(&cfg.NodeName, "node-name", "", "name of the node (default: the host name)")
	f.StringVar(&cfg.NodeIP, "node-ip", "", "the node's IP shown as the pods' hostIP (default: the first global IPv4 address)")
	f.IntVar(&cfg.ReadOnlyPort, "read-only-port", 0, "port of the unauthenticated read-only HTTP API (GET /pods, /healthz, /metrics; the kubelet's was 10255); 0, the default, disables it")
	f.StringVar(&cfg.ReadOnlyAddress, "address", "", "address the read-only API listens on (default "+agent.DefaultReadOnlyAddress+")")
	f.StringVar(&cfg.CgroupRoot, "cgroup-root", "", "cgroup the kubepods hierarchy goes under (distinct per agent on one machine; default /)")
	f.StringVar(&cfg.ClusterDomain, "cluster-domain", agent.DefaultClusterDomain, "the cluster's DNS domain")
	f.IPSliceVar(&cfg.ClusterDNS, "cluster-dns", nil, "cluster DNS server IPs for ClusterFirst pods")
	f.StringVar(&cfg.ResolvConf, "resolv-conf", agent.DefaultResolvConf, "resolver file Default-DNS pods inherit")
	f.StringSliceVar(&cfg.AllowedUnsafeSysctls, "allowed-unsafe-sysctls", nil, "comma-separated unsafe sysctls or sysctl patterns (ending in *) pods may set besides the safe ones")
	f.IntVar(&cfg.MaxParallelStarts, "max-parallel-pod-starts", 0, "pod starts in flight at once, first come first served (default 2 × CPUs)")
	f.StringVar(&cfg.Server, "server", "", "join the control plane at this apiserver URL (https://HOST:6443), or at any of several replicas' URLs, comma-separated (a client-side balancer fails over between them and the servers the default/kubernetes EndpointSlice names): register the Node and run the pods bound to it")
	f.StringVar(&cfg.TokenFile, "token-file", "", "file holding the join token (the server's DATA-DIR/agent-token); required with --server")
	f.StringVar(&cfg.CAFile, "ca-file", "", "cluster CA bundle verifying the apiserver (the server's DATA-DIR/ca.crt; default the system's roots)")
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig to reach the apiserver with, instead of --server/--token-file/--ca-file")
	f.IntVar(&cfg.KubeletPort, "kubelet-port", agent.DefaultKubeletPort, "port of the authenticated agent API (logs, exec, port-forward) when joined")
	f.StringVar(&cfg.KubeletAddress, "kubelet-address", "", "address the agent API listens on (default all)")
	f.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "agent API serving certificate; signed by the cluster CA for kubectl logs/exec (default: self-signed under --root-dir/pki)")
	f.StringVar(&cfg.TLSKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	f.StringVar(&cfg.ClientCAFile, "client-ca-file", "", "CA verifying the agent API's clients (default --ca-file)")
	f.BoolVar(&cfg.DisableServiceProxy, "disable-service-proxy", false, "do not run the node's service proxy (nftables rules for Services' ClusterIPs and NodePorts), e.g. when kube-proxy runs")
	f.StringVar(&cfg.ProxyTable, "proxy-table", "", `nftables table the service proxy owns (default "berth-proxy", or "berth-proxy-<cni-bridge>" with a non-default bridge)`)
	f.BoolVar(&cfg.ProxyCleanupOnExit, "proxy-cleanup-on-exit", false, "delete the service proxy's nftables table (and the pod egress masquerading table) when the agent stops (default: leave them, as kube-proxy, so Services keep working across agent restarts)")
	f.BoolVar(&cfg.DisablePodRoutes, "disable-pod-routes", false, "do not route to the other Nodes' pod CIDRs (host-gw: via their InternalIPs on a shared segment) nor masquerade pod traffic leaving the cluster's pod ranges, e.g. when another CNI connects the nodes")
	f.StringVar(&cfg.EgressTable, "egress-table", "", `nftables table masquerading pod traffic that leaves the cluster's pod ranges (default "berth-egress", or "berth-egress-<cni-bridge>" with a non-default bridge)`)
	f.StringVar(&cfg.ProxyHealthzBindAddress, "proxy-healthz-bind-address", "127.0.0.1:10256", `host:port the service proxy serves kube-proxy's /healthz and /livez on ("" turns them off)`)
	f.StringVar(&fl.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&fl.configFile, "config", "", "a kubelet configuration file (KubeletConfiguration, kubelet.config.k8s.io/v1beta1): berth applies the fields it supports, warns about the others; flags given override it")
	fl.node.register(f)
	// Test-only: scale the crash-loop back-off so integration tests can watch
	// several restarts in seconds. Hidden; real nodes keep upstream's 10 s / 5 min.
	f.DurationVar(&fl.backOff.Initial, "container-backoff-initial", 0, "test only: first crash-loop back-off delay (default 10s)")
	f.DurationVar(&fl.backOff.Max, "container-backoff-max", 0, "test only: crash-loop back-off cap (default 5m)")
	f.DurationVar(&cfg.ImageBackOffInitial, "image-backoff-initial", 0, "test only: first image pull back-off delay (default 10s)")
	f.DurationVar(&cfg.ImageBackOffMax, "image-backoff-max", 0, "test only: image pull back-off cap (default 5m)")
	cfg.ImageGCPolicy = imagegc.DefaultPolicy()
	gc := &cfg.ImageGCPolicy
	f.IntVar(&gc.HighThresholdPercent, "image-gc-high-threshold", gc.HighThresholdPercent, "percent of the image filesystem's space used at which unused images are removed (100 disables it)")
	f.IntVar(&gc.LowThresholdPercent, "image-gc-low-threshold", gc.LowThresholdPercent, "percent of the image filesystem's space used that image garbage collection frees down to")
	f.DurationVar(&gc.MinAge, "minimum-image-ttl-duration", gc.MinAge, "minimum age of an unused image before it may be garbage collected")
	f.DurationVar(&cfg.HousekeepingInterval, "housekeeping-interval", stats.DefaultInterval, "how often resource usage is sampled for /stats/summary and /metrics/{resource,cadvisor}")
	f.DurationVar(&cfg.ManifestRescan, "manifest-rescan", 20*time.Second, "period of the full manifest directory rescan besides inotify")
	for _, hidden := range []string{"container-backoff-initial", "container-backoff-max", "image-backoff-initial", "image-backoff-max"} {
		_ = f.MarkHidden(hidden) // the flags exist: MarkHidden cannot fail
	}
}
