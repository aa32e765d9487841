package agent

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"berth/agent/backoff"
	"berth/internal/errdefs"
)

// Defaults of the agent's settings, as the kubelet's where it has one.
const (
	DefaultCNIConfDir    = "/etc/cni/net.d"
	DefaultPodLogDir     = "/var/log/pods"
	DefaultReadOnlyPort  = 10255
	DefaultCNIBridge     = "berth0"
	DefaultNetworkName   = "berth"
	DefaultResolvConf    = "/etc/resolv.conf"
	DefaultClusterDomain = "cluster.local"
)

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
	// ReadOnlyAddress and ReadOnlyPort are where GET /pods and /healthz are
	// served; port 0 disables the API.
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
	// RelistPeriod is the PLEG's; zero is 1 s.
	RelistPeriod time.Duration
	// ManifestRescan is the manifest directory's full rescan period; zero
	// is 20 s (inotify reports changes at once).
	ManifestRescan time.Duration

	// Logger receives the agent's logs; nil discards them.
	Logger *slog.Logger
}

// validate checks c and fills in the defaults. Errors name the field and
// wrap errdefs.ErrInvalidArgument.
func (c *Config) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("agent config: %s: %s: %w", field, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
	}
	for _, f := range []struct{ name, value string }{
		{"PodManifestPath (--pod-manifest-path)", c.PodManifestPath},
		{"RuntimeEndpoint (--container-runtime-endpoint)", c.RuntimeEndpoint},
		{"RootDir (--root-dir)", c.RootDir},
		{"PodCIDR (--pod-cidr)", c.PodCIDR},
	} {
		if f.value == "" {
			return bad(f.name, "required")
		}
	}
	if p, err := netip.ParsePrefix(c.PodCIDR); err != nil || p.Masked() != p {
		return bad("PodCIDR (--pod-cidr)", "%q is not a network CIDR such as 10.88.0.0/16", c.PodCIDR)
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
		if *f.value, err = filepath.Abs(*f.value); err != nil {
			return bad(f.name, "%v", err)
		}
	}
	if len(c.CNIBinDirs) == 0 {
		c.CNIBinDirs = DefaultCNIBinDirs
	}
	if c.ReadOnlyPort < 0 || c.ReadOnlyPort > 65535 {
		return bad("ReadOnlyPort (--read-only-port)", "%d is not a port (0 disables the API)", c.ReadOnlyPort)
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
	if c.MaxParallelStarts < 0 {
		return bad("MaxParallelStarts", "%d must not be negative", c.MaxParallelStarts)
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
