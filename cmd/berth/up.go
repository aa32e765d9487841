package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"berth/controlplane/server"
	"berth/internal/containerd"
	"berth/up"
)

// newUpCommand maps the flags of `berth up` onto up.Config.
func newUpCommand() *cobra.Command {
	var (
		cfg            up.Config
		registriesFile string
		logLevel       string
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a whole single-node cluster on this machine: containerd, the control plane and the agent",
		Long: `Run a single-node cluster in the foreground: berth's own containerd (with a
generated config under DATA-DIR/containerd, unless --container-runtime-endpoint
names a running runtime), the control plane with its embedded etcd, its
controllers and the scheduler, and the node agent joined to it (with
DATA-DIR/agent-token). It prints the kubectl command line to use once the
node is Ready: pods created through the API are scheduled onto the node and
run there; the static pods of DATA-DIR/manifests run too (with mirror pods).

The node's pod network is --pod-cidr: the control plane assigns exactly that
range to the node (its spec.podCIDR) and the agent's CNI config uses it. A
node keeps its pod CIDR, so a different --pod-cidr on an existing data dir is
refused until the node is deleted.

The pause image is built from the "pause" binary beside berth (or
--pause-binary) and served from a registry on 127.0.0.1, so no network is
needed. --registries takes a file in the format of k3s's registries.yaml
(mirrors and per-registry TLS become containerd's hosts.toml; credentials
stay with the agent).

Ctrl-C or SIGTERM stops everything in reverse order. With berth's own
containerd every pod is removed through CRI first and the pod bridge
deleted, so nothing is left running; the cluster's objects stay in
DATA-DIR and come back on the next start.

  berth up --data-dir /var/lib/berth
  kubectl --kubeconfig /var/lib/berth/admin.kubeconfig get nodes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(cmd, logLevel)
			if err != nil {
				return err
			}
			cfg.Logger = logger
			if registriesFile != "" {
				regs, err := containerd.LoadRegistries(registriesFile)
				if err != nil {
					return fmt.Errorf("--registries: %w", err)
				}
				cfg.Registries = regs
			}
			out := cmd.OutOrStdout()
			cfg.OnReady = func(info up.Info) { printUpInfo(out, info) }
			c, err := up.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			if err := c.Run(ctx); err != nil {
				return err
			}
			fmt.Fprintln(out, "berth up: stopped")
			return nil
		},
	}
	registerUpFlags(cmd.Flags(), &cfg, &registriesFile, &logLevel)
	return cmd
}

// registerUpFlags defines the flags of `berth up` on f.
func registerUpFlags(f *pflag.FlagSet, cfg *up.Config, registriesFile, logLevel *string) {
	f.StringVar(&cfg.DataDir, "data-dir", up.DefaultDataDir, "directory for all of the cluster's state (credentials, etcd, containerd, agent)")
	f.StringVar(&cfg.RuntimeEndpoint, "container-runtime-endpoint", "", "CRI endpoint of a running runtime to use instead of starting berth's own containerd")
	f.StringVar(registriesFile, "registries", "", "registries file (k3s registries.yaml format): mirrors, TLS and credentials per registry")
	f.StringVar(&cfg.PodCIDR, "pod-cidr", up.DefaultPodCIDR, "the node's pod subnet (IPv4, at most /30): its Node's spec.podCIDR")
	f.StringVar(&cfg.ServiceClusterIPRange, "service-cluster-ip-range", server.DefaultServiceClusterIPRange, "CIDR the Services' cluster IPs come from (its first address is the kubernetes Service's)")
	f.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", server.DefaultServiceNodePortRange, "port range NodePort and LoadBalancer Services' node ports come from")
	f.StringVar(&cfg.CNIBridge, "cni-bridge", up.DefaultCNIBridge, "Linux bridge the pods attach to")
	f.StringVar(&cfg.ResolvConf, "resolv-conf", up.DefaultResolvConf, "the node's resolv.conf: the cluster DNS forwards other names to its nameservers, pods get its search domains")
	f.StringVar(&cfg.CNIConfDir, "cni-conf-dir", "", "CNI conf dir (default DATA-DIR/cni/net.d; with --container-runtime-endpoint, the runtime's: /etc/cni/net.d)")
	f.StringVar(&cfg.CNIBinDir, "cni-bin-dir", "", "directory of the CNI plugins (default /usr/lib/cni or /opt/cni/bin)")
	f.StringVar(&cfg.Listen, "listen", "", "apiserver listen address host:port (default 0.0.0.0:6443; port 0 picks a free one)")
	f.StringVar(&cfg.EncryptionProviderConfig, "encryption-provider-config", "", "EncryptionConfiguration file: encrypt the resources it lists in etcd (see berth server --help)")
	f.DurationVar(&cfg.EtcdCompactionInterval, "etcd-compaction-interval", server.DefaultCompactionInterval, "how often the control plane compacts old etcd revisions")
	f.BoolVar(&cfg.Profiling, "profiling", true, "serve the Go runtime's profiles at the apiserver's /debug/pprof/ to callers authorized for that path (see berth server --help)")
	f.StringVar(&cfg.NodeName, "node-name", "", "name of the node (default: the host name)")
	f.IntVar(&cfg.KubeletPort, "kubelet-port", 10250, "port of the agent's authenticated API (kubectl logs, exec and port-forward go through it)")
	f.IntVar(&cfg.ReadOnlyPort, "read-only-port", 0, "port of the agent's unauthenticated read-only API on 127.0.0.1 (GET /pods, /healthz, /metrics; the kubelet's was 10255); 0, the default, disables it")
	f.StringVar(&cfg.PauseBinary, "pause-binary", "", `berth's static pause binary (default "pause" beside the berth executable)`)
	f.StringVar(&cfg.ContainerdBinary, "containerd", "", "containerd executable (default: containerd on PATH)")
	f.StringVar(logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.IntVar(&cfg.IngressHTTPPort, "ingress-http-port", up.DefaultIngressHTTPPort, "port of the built-in ingress controller's HTTP listener, on every address")
	f.IntVar(&cfg.IngressHTTPSPort, "ingress-https-port", up.DefaultIngressHTTPSPort, "port of the built-in ingress controller's HTTPS listener, on every address")
	f.StringVar(&cfg.KubeletConfig, "kubelet-config", "", "a kubelet configuration file (KubeletConfiguration) for the agent, as berth agent --config; what berth up wires itself (apiserver, runtime, static pods, pod CIDR, cluster DNS, its ports) stays")
	f.BoolVar(&cfg.DisableIngress, "disable-ingress", false, "do not run the built-in ingress controller (nor create its IngressClass \"berth\")")
}

// printUpInfo tells the user how to reach the cluster.
func printUpInfo(w io.Writer, info up.Info) {
	fmt.Fprintf(w, "berth up: cluster ready; apiserver at https://%s\n", info.Server)
	if info.OwnContainerd {
		fmt.Fprintf(w, "berth up: containerd at %s (sandbox image %s)\n", info.RuntimeEndpoint, info.SandboxImage)
	} else {
		fmt.Fprintf(w, "berth up: using the runtime at %s\n", info.RuntimeEndpoint)
	}
	fmt.Fprintf(w, "berth up: node %s Ready, pod CIDR %s; static pods from %s\n", info.NodeName, info.PodCIDR, info.ManifestDir)
	if info.IngressHTTP != "" {
		fmt.Fprintf(w, "berth up: ingress controller (IngressClass berth) on http %s, https %s\n", info.IngressHTTP, info.IngressHTTPS)
	}
	fmt.Fprintf(w, "berth up: use: kubectl --kubeconfig %s get pods\n", info.Kubeconfig)
}
