package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/agent/apilb"
	"berth/agent/backoff"
	"berth/agent/eviction"
	"berth/agent/imagegc"
	"berth/agent/node"
	"berth/agent/proxy"
	"berth/agent/sysctl"
	"berth/internal/errdefs"
)

// Defaults of the agent's settings, as the kubelet's where it has one.
const (
	DefaultCNIConfDir    = "/etc/cni/net.d"
	DefaultPodLogDir     = "/var/log/pods"
	DefaultCNIBridge     = "berth0"
	DefaultNetworkName   = "berth"
	DefaultResolvConf    = "/etc/resolv.conf"
	DefaultClusterDomain = "cluster.local"
	DefaultEgressTable   = "berth-egress"
)

// DefaultReadOnlyAddress is where an enabled read-only API listens unless
// ReadOnlyAddress says otherwise: it is unauthenticated.
const DefaultReadOnlyAddress = "127.0.0.1"

// DefaultCNIBinDirs are searched for CNI plugins: Debian's package, then the
// upstream location.
var DefaultCNIBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// Config is the agent's configuration. Fill it, then New validates it and
// applies the defaults.
type Config struct {
	// PodManifestPath is the static pod directory; required.
	PodManifestPath string
	// RuntimeEndpoint is the CRI socket ("unix:///run/containerd/containerd.sock"); required.
	RuntimeEndpoint string
	// RootDir holds the agent's state (per-pod files, host-local's IP
	// store); required, created if missing.
	RootDir string
	// PodCIDR is the node's pod subnet, handed out by host-local; required.
	PodCIDR string

	// CNIConfDir is where the agent writes the node's conflist (the
	// runtime's CNI conf dir).
	CNIConfDir string
	// CNIBinDirs are searched for the CNI plugins.
	CNIBinDirs []string
	// CNIBridge is the Linux bridge the pods attach to.
	CNIBridge string
	// CNINetworkName is the conflist's network name.
	CNINetworkName string
	// PodLogDir is the root of the pod log directories.
	PodLogDir string
	// NodeName names the node (static pods get "-<node name>"); default the
	// host name, lower-cased.
	NodeName string
	// NodeIP is the node's address in pod status; default the first global
	// unicast IPv4 address of the host.
	NodeIP string
	// ReadOnlyAddress and ReadOnlyPort are where the unauthenticated GET
	// /pods, /healthz and /metrics are served; port 0 (the default, as the
	// kubelet's) disables the API, the address defaults to
	// DefaultReadOnlyAddress.
	ReadOnlyAddress string
	ReadOnlyPort    int
	// CgroupRoot is the cgroup the kubepods hierarchy goes under; "" is "/".
	CgroupRoot string

	// ClusterDNS, ClusterDomain and ResolvConf shape pod DNS.
	ClusterDNS    []net.IP
	ClusterDomain string
	ResolvConf    string

	// ContainerBackOff is the crash-loop back-off; zero is upstream's
	// (10 s doubling to 5 min, reset after 10 min).
	ContainerBackOff backoff.Policy
	// ImageBackOffInitial and ImageBackOffMax shape the image pull
	// back-off; zero is upstream's (10 s, 5 min).
	ImageBackOffInitial, ImageBackOffMax time.Duration
	// MaxParallelStarts bounds pod starts in flight; zero is 2 × CPUs.
	MaxParallelStarts int
	// AllowedUnsafeSysctls are the sysctls (or prefixes ending in *) pods
	// may set besides the safe ones; a pod setting any other is rejected
	// (SysctlForbidden).
	AllowedUnsafeSysctls []string
	// RelistPeriod is the PLEG's; zero is 1 s.
	RelistPeriod time.Duration
	// ImageGCPolicy is when unused images are removed; zero is the
	// kubelet's (85 % / 80 % of the image filesystem, images at least 2m old).
	ImageGCPolicy imagegc.Policy
	// EvictionHard are the hard eviction thresholds (--eviction-hard); nil
	// is the kubelet's defaults (memory.available<100Mi, nodefs.available<10%,
	// nodefs.inodesFree<5%, imagefs.available<15%), an empty map none.
	// EvictionSoft are the soft ones, each needing a grace period in
	// EvictionSoftGracePeriod; EvictionMinimumReclaim is how much more than
	// a threshold to reclaim once it is met.
	EvictionHard, EvictionSoft node.Thresholds
	EvictionSoftGracePeriod    map[node.Signal]time.Duration
	EvictionMinimumReclaim     node.Thresholds
	// EvictionMaxPodGracePeriod bounds the grace period of pods evicted
	// for a soft threshold (--eviction-max-pod-grace-period).
	EvictionMaxPodGracePeriod time.Duration
	// EvictionPressureTransitionPeriod is how long a pressure condition
	// stays after its threshold was last met; zero is 5m.
	EvictionPressureTransitionPeriod time.Duration
	// MaxPods is the node's pods capacity; zero is 110.
	MaxPods int64
	// SystemReserved and KubeReserved are subtracted from the node's
	// capacity for its allocatable (cpu, memory, ephemeral-storage, pid).
	SystemReserved, KubeReserved v1.ResourceList
	// RegisterWithTaints are the Node's taints when it registers.
	RegisterWithTaints []v1.Taint
	// NodeLabels are added to the Node's standard labels.
	NodeLabels map[string]string
	// NodeStatusUpdateFrequency is how often the node's status is
	// computed (and written if it changed); zero is 10 s.
	// NodeStatusReportFrequency is how often it is written even unchanged;
	// zero is 5 m.
	NodeStatusUpdateFrequency, NodeStatusReportFrequency time.Duration

	// HousekeepingInterval is how often resource usage is sampled for
	// /stats/summary and /metrics/{resource,cadvisor}; zero is 10 s.
	HousekeepingInterval time.Duration
	// ManifestRescan is the manifest directory's full rescan period; zero
	// is 20 s (inotify reports changes at once).
	ManifestRescan time.Duration

	// Server is the apiserver's URL ("https://HOST:6443"), or several
	// replicas' URLs comma-separated: with it (or Kubeconfig) the agent
	// joins the control plane — it registers its Node, runs the pods bound
	// to it besides the static ones, and writes their status. Every
	// connection goes through a client-side balancer (agent/apilb) across
	// these servers and the ones the default/kubernetes EndpointSlice names,
	// failing over when one goes away. Empty (and no Kubeconfig): standalone.
	Server string
	// TokenFile holds the bearer token the agent authenticates with
	// (the server's DATA-DIR/agent-token); required with Server.
	TokenFile string
	// CAFile is the cluster CA bundle the apiserver's certificate is
	// verified against (DATA-DIR/ca.crt); empty: the system's roots.
	CAFile string
	// Kubeconfig is a kubeconfig file to reach the apiserver with, instead
	// of Server, TokenFile and CAFile.
	Kubeconfig string
	// KubeletAddress and KubeletPort are where the authenticated agent API
	// (logs, exec, attach, port-forward, metrics) listens when joined;
	// port 0 is DefaultKubeletPort.
	KubeletAddress string
	KubeletPort    int
	// TLSCertFile and TLSKeyFile are the agent API's serving certificate;
	// for the apiserver's proxy (kubectl logs/exec) it must be signed by the
	// cluster CA. Empty: a self-signed one is generated under RootDir/pki.
	TLSCertFile, TLSKeyFile string
	// ClientCAFile verifies the agent API's client certificates; default
	// CAFile (or the kubeconfig's CA).
	ClientCAFile string

	// DisableServiceProxy turns off the node's service proxy, which
	// otherwise runs whenever the agent is joined (agent/proxy).
	DisableServiceProxy bool
	// ProxyTable is the nftables table the service proxy owns; default
	// "berth-proxy", or "berth-proxy-<CNIBridge>" with a non-default bridge,
	// so agents sharing a host (each with its own bridge) never share a table.
	ProxyTable string
	// ProxyCleanupOnExit deletes the service proxy's table when the agent
	// stops; false (kube-proxy's way) leaves it, so Services keep working
	// while the agent restarts and the next run resyncs it in place.
	ProxyCleanupOnExit bool
	// DisablePodRoutes turns off the routes to the other Nodes' pod CIDRs
	// and the masquerading of pod traffic leaving the pod ranges (cni/routes),
	// which otherwise run whenever the agent is joined: e.g. when another
	// CNI connects the nodes.
	DisablePodRoutes bool
	// EgressTable is the nftables table of that masquerading; default
	// "berth-egress", or "berth-egress-<CNIBridge>" with a non-default
	// bridge. ProxyCleanupOnExit deletes it too when the agent stops.
	EgressTable string
	// ProxyHealthzBindAddress is where the service proxy serves
	// kube-proxy's /healthz and /livez (host:port); empty: not served.
	ProxyHealthzBindAddress string

	// Logger receives the agent's logs; nil discards them.
	Logger *slog.Logger
}

// DefaultKubeletPort is the agent API's port, as the kubelet's.
const DefaultKubeletPort = 10250

// Servers are Server's URLs.
func (c *Config) Servers() []string {
	var out []string
	for _, s := range strings.Split(c.Server, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Joined reports whether the agent joins a control plane.
func (c *Config) Joined() bool { return c.Server != "" || c.Kubeconfig != "" }

// validate checks c and fills in the defaults. Errors name the field and
// wrap errdefs.ErrInvalidArgument.
func (c *Config) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("agent config: %s: %s: %w", field, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
	}
	for _, f := range []struct {
		name, value string
		required    bool
	}{
		{"PodManifestPath (--pod-manifest-path)", c.PodManifestPath, !c.Joined()},
		{"RuntimeEndpoint (--container-runtime-endpoint)", c.RuntimeEndpoint, true},
		{"RootDir (--root-dir)", c.RootDir, true},
		{"PodCIDR (--pod-cidr)", c.PodCIDR, !c.Joined()},
	} {
		if f.required && f.value == "" {
			return bad(f.name, "required")
		}
	}
	if c.PodCIDR != "" {
		if p, err := netip.ParsePrefix(c.PodCIDR); err != nil || p.Masked() != p {
			return bad("PodCIDR (--pod-cidr)", "%q is not a network CIDR such as 10.88.0.0/16", c.PodCIDR)
		}
	}
	switch {
	case c.Server != "" && c.Kubeconfig != "":
		return bad("Server (--server)", "give either --server with --token-file, or --kubeconfig, not both")
	case c.Server != "" && c.TokenFile == "":
		return bad("TokenFile (--token-file)", "required with --server")
	case (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		return bad("TLSCertFile (--tls-cert-file)", "--tls-cert-file and --tls-private-key-file go together")
	case c.KubeletPort < 0 || c.KubeletPort > 65535:
		return bad("KubeletPort (--kubelet-port)", "%d is not a port", c.KubeletPort)
	}
	for _, u := range c.Servers() {
		if _, err := apilb.HostPort(u); err != nil {
			return bad("Server (--server)", "%v", errors.Unwrap(err))
		}
	}
	if c.KubeletPort == 0 {
		c.KubeletPort = DefaultKubeletPort
	}
	if c.ClientCAFile == "" {
		c.ClientCAFile = c.CAFile
	}
	for _, f := range []struct {
		name  string
		value *string
		def   string
	}{
		{"CNIConfDir", &c.CNIConfDir, DefaultCNIConfDir},
		{"PodLogDir", &c.PodLogDir, DefaultPodLogDir},
		{"CNIBridge", &c.CNIBridge, DefaultCNIBridge},
		{"CNINetworkName", &c.CNINetworkName, DefaultNetworkName},
		{"ResolvConf", &c.ResolvConf, DefaultResolvConf},
		{"ClusterDomain", &c.ClusterDomain, DefaultClusterDomain},
	} {
		if *f.value == "" {
			*f.value = f.def
		}
	}
	var err error
	for _, f := range []struct {
		name  string
		value *string
	}{{"PodManifestPath", &c.PodManifestPath}, {"RootDir", &c.RootDir}, {"CNIConfDir", &c.CNIConfDir}, {"PodLogDir", &c.PodLogDir}} {
		if *f.value == "" {
			continue
		}
		if *f.value, err = filepath.Abs(*f.value); err != nil {
			return bad(f.name, "%v", err)
		}
	}
	if len(c.CNIBinDirs) == 0 {
		c.CNIBinDirs = DefaultCNIBinDirs
	}
	if c.ProxyTable == "" {
		c.ProxyTable = proxy.DefaultTable
		if c.CNIBridge != DefaultCNIBridge {
			c.ProxyTable += "-" + c.CNIBridge
		}
	}
	if c.EgressTable == "" {
		c.EgressTable = DefaultEgressTable
		if c.CNIBridge != DefaultCNIBridge {
			c.EgressTable += "-" + c.CNIBridge
		}
	}
	if a := c.ProxyHealthzBindAddress; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return bad("ProxyHealthzBindAddress (--proxy-healthz-bind-address)", "%q is not host:port: %v", a, err)
		}
	}
	if c.ReadOnlyPort < 0 || c.ReadOnlyPort > 65535 {
		return bad("ReadOnlyPort (--read-only-port)", "%d is not a port (0 disables the API)", c.ReadOnlyPort)
	}
	if c.ReadOnlyPort != 0 && c.ReadOnlyAddress == "" {
		c.ReadOnlyAddress = DefaultReadOnlyAddress
	}
	if c.NodeName == "" {
		host, err := os.Hostname()
		if err != nil {
			return bad("NodeName (--node-name)", "not set and the host name is unknown: %v", err)
		}
		c.NodeName = strings.ToLower(host)
	}
	if c.NodeName != strings.ToLower(c.NodeName) {
		return bad("NodeName (--node-name)", "%q must be lower case", c.NodeName)
	}
	if c.NodeIP == "" {
		c.NodeIP = detectNodeIP()
	} else if net.ParseIP(c.NodeIP) == nil {
		return bad("NodeIP (--node-ip)", "%q is not an IP address", c.NodeIP)
	}
	if c.ContainerBackOff == (backoff.Policy{}) {
		c.ContainerBackOff = backoff.DefaultPolicy()
	}
	if err := c.ContainerBackOff.Validate(); err != nil {
		return bad("ContainerBackOff", "%v", err)
	}
	if c.ImageGCPolicy == (imagegc.Policy{}) {
		c.ImageGCPolicy = imagegc.DefaultPolicy()
	}
	if err := c.ImageGCPolicy.Validate(); err != nil {
		return bad("ImageGCPolicy (--image-gc-high-threshold, --image-gc-low-threshold, --minimum-image-ttl-duration)", "%v", err)
	}
	if c.EvictionHard == nil {
		c.EvictionHard = node.DefaultEvictionHard()
	}
	if _, err := eviction.Thresholds(c.EvictionHard, c.EvictionSoft, c.EvictionSoftGracePeriod, c.EvictionMinimumReclaim); err != nil {
		return bad("EvictionSoftGracePeriod (--eviction-soft-grace-period)", "%v", err)
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"EvictionMaxPodGracePeriod (--eviction-max-pod-grace-period)", c.EvictionMaxPodGracePeriod},
		{"EvictionPressureTransitionPeriod (--eviction-pressure-transition-period)", c.EvictionPressureTransitionPeriod},
		{"NodeStatusUpdateFrequency (--node-status-update-frequency)", c.NodeStatusUpdateFrequency},
		{"NodeStatusReportFrequency", c.NodeStatusReportFrequency},
	} {
		if d.value < 0 {
			return bad(d.name, "%s must not be negative", d.value)
		}
	}
	if c.MaxPods < 0 {
		return bad("MaxPods (--max-pods)", "%d must not be negative", c.MaxPods)
	}
	if c.MaxParallelStarts < 0 {
		return bad("MaxParallelStarts", "%d must not be negative", c.MaxParallelStarts)
	}
	if _, err := sysctl.NewAllowlist(c.AllowedUnsafeSysctls); err != nil {
		return bad("AllowedUnsafeSysctls (--allowed-unsafe-sysctls)", "%v", err)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// detectNodeIP picks the first global unicast IPv4 address of an up,
// non-loopback interface; 127.0.0.1 when there is none.
func detectNodeIP() string {
	ifaces, err := net.Interfaces()
	if err == nil {
		for _, ifc := range ifaces {
			if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
				continue
			}
			addrs, err := ifc.Addrs()
			if err != nil {
				continue
			}
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
					return ipn.IP.String()
				}
			}
		}
	}
	return "127.0.0.1"
}
