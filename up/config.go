// Package up is the composition root of `berth up`: a single-node
// cluster on this machine. It runs, under one Run(ctx):
//
//  1. its own containerd (internal/containerd) with a generated config —
//     unless RuntimeEndpoint names a running one — whose sandbox image is
//     the pause image built from berth's pause binary and served from an
//     in-process registry on 127.0.0.1 (so a node with no network starts
//     pods), and whose registry hosts come from the registries file;
//  2. the control plane (controlplane/server) with its embedded etcd, its
//     controllers and the scheduler;
//  3. the cluster DNS (clusterdns) on the pod bridge's gateway address,
//     port 53 (the pods' --cluster-dns), answering the cluster domain from
//     the API and forwarding other names to the node's resolv.conf servers;
//  4. the node agent (agent), joined to that control plane with the
//     server's agent token and CA (DATA-DIR/agent-token, DATA-DIR/ca.crt):
//     it registers the Node, runs the pods the scheduler binds to it and,
//     as k3s's agent does, the static pods of DATA-DIR/manifests too (both
//     sources feed the same pod workers; static pods get mirror pods);
//  5. once the node is Ready, the ingress controller (berth/ingress) on
//     the node's ports 80 and 443 (IngressHTTPPort, IngressHTTPSPort) with
//     its own client certificate (DATA-DIR/ingress-controller.crt, user
//     system:berth-ingress-controller), serving the IngressClass "berth",
//     which it creates as the default class; ports in use leave it out,
//     with a warning, rather than stop the cluster.
//
// The node's pod network is PodCIDR: the server's nodeipam gets PodCIDR as
// its cluster CIDR with a node mask of PodCIDR's own prefix length, so the
// single node's spec.podCIDR is exactly PodCIDR, and the agent, given no
// pod CIDR of its own, writes its CNI config from that spec.podCIDR — the
// Node and the CNI config cannot disagree. A Node keeps its podCIDR once
// set, so changing PodCIDR for an existing data dir needs the Node deleted
// (Run fails, saying so, rather than run pods on a network the Node does
// not declare).
//
// When ctx ends the components stop in reverse order. With its own
// containerd, every pod sandbox and container is then removed through CRI
// (CNI DEL, shims exit), containerd is stopped, anything still mounted
// under the data dir is unmounted and the pod bridge deleted: `berth up`
// leaves nothing running behind it. (k3s instead leaves pods running across
// restarts; the agent adopts them when it starts again. berth up is a
// whole cluster in one foreground command, so its end is the cluster's
// end; the API objects stay in etcd and the pods come back on the next
// start.) A containerd named by RuntimeEndpoint is not berth's: its pods are
// left as the agent leaves them.
package up

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"berth/agent"
	"berth/controlplane/server"
	"berth/internal/containerd"
	"berth/internal/errdefs"
)

// Defaults for Config.
const (
	DefaultDataDir   = "/var/lib/berth"
	DefaultPodCIDR   = "10.42.0.0/24"
	DefaultCNIBridge = agent.DefaultCNIBridge
	// DefaultResolvConf is the node's resolv.conf.
	DefaultResolvConf = agent.DefaultResolvConf
	// PauseRegistryHost is the registry name the pause image is published
	// under; containerd's hosts config sends it to the in-process registry.
	PauseRegistryHost = "berth.local"
	// PauseRepository is the pause image's repository in that registry.
	PauseRepository = "berth/pause"
	// DefaultIngressHTTPPort and DefaultIngressHTTPSPort are the ingress
	// controller's ports.
	DefaultIngressHTTPPort  = 80
	DefaultIngressHTTPSPort = 443
)

// Config configures a single-node cluster.
type Config struct {
	// DataDir holds everything: the control plane's credentials and etcd
	// (DATA-DIR/admin.kubeconfig), containerd's root and config
	// (DATA-DIR/containerd), the CNI config (DATA-DIR/cni), the agent's
	// state (DATA-DIR/agent) and its static pod manifests
	// (DATA-DIR/manifests). Default /var/lib/berth.
	DataDir string
	// RuntimeEndpoint, when set, is a running CRI runtime to use instead of
	// starting berth's own containerd; CNIConfDir must then be the
	// runtime's CNI conf dir.
	RuntimeEndpoint string
	// CNIConfDir is where the agent writes the node's conflist; default
	// DATA-DIR/cni/net.d with berth's containerd, agent.DefaultCNIConfDir
	// with RuntimeEndpoint.
	CNIConfDir string
	// CNIBinDir holds the CNI plugins; default the first of
	// agent.DefaultCNIBinDirs that has a bridge plugin.
	CNIBinDir string
	// Registries are the mirrors and TLS settings of the registries file;
	// its credentials are the node's (see berth/agent/credentials).
	Registries containerd.Registries
	// PodCIDR is the node's pod subnet (its Node's spec.podCIDR and the
	// CNI config's range); default 10.42.0.0/24. IPv4, at most /30.
	PodCIDR string
	// ServiceClusterIPRange and ServiceNodePortRange are the control
	// plane's (server.Config's); defaults 10.43.0.0/16 and 30000-32767.
	ServiceClusterIPRange, ServiceNodePortRange string
	// CNIBridge is the pods' bridge; default berth0.
	CNIBridge string
	// ResolvConf is the node's resolv.conf: the cluster DNS forwards names
	// outside the cluster domain to its nameservers, and pods get its
	// search domains (the agent's ResolvConf); default /etc/resolv.conf.
	ResolvConf string
	// Listen is the apiserver's address; default server.DefaultListen.
	Listen string
	// EncryptionProviderConfig is the control plane's EncryptionConfiguration
	// file (server.Config.EncryptionProviderConfig); empty: no encryption at rest.
	EncryptionProviderConfig string
	// Profiling serves /debug/pprof on the apiserver (server.Config.Profiling).
	Profiling bool
	// EtcdCompactionInterval is how often the control plane compacts old
	// etcd revisions (server.Config.EtcdCompactionInterval); default
	// server.DefaultCompactionInterval.
	EtcdCompactionInterval time.Duration
	// NodeName names the node; default the host name.
	NodeName string
	// ReadOnlyPort is the agent's read-only API port (0 disables it);
	// ReadOnlyAddress its address, default 127.0.0.1.
	ReadOnlyPort    int
	ReadOnlyAddress string
	// KubeletPort is the agent's authenticated API port (logs, exec,
	// port-forward through the apiserver); default 10250.
	KubeletPort int
	// PauseBinary is berth's static pause binary; default "pause" beside
	// the running executable. Not used with RuntimeEndpoint.
	PauseBinary string
	// ContainerdBinary is containerd's executable; default from PATH.
	ContainerdBinary string
	// IngressHTTPPort and IngressHTTPSPort are the built-in ingress
	// controller's ports on every address of the node; defaults 80 and
	// 443. DisableIngress leaves the controller out (and its
	// IngressClass uncreated).
	IngressHTTPPort, IngressHTTPSPort int
	DisableIngress                    bool
	// KubeletConfig is a KubeletConfiguration file (--kubelet-config)
	// applied to the agent, as `berth agent --config`: except for what
	// berth up wires itself (the apiserver and credentials, the runtime,
	// the static pod directory, the pod CIDR, the cluster DNS, and the
	// ports its own flags set), its fields win over berth up's defaults.
	KubeletConfig string
	// OnReady is called once, when every component is up.
	OnReady func(Info)
	// Logger receives every component's log; nil discards.
	Logger *slog.Logger
}

// Info tells how to reach a running cluster.
type Info struct {
	// Kubeconfig is the admin kubeconfig, DATA-DIR/admin.kubeconfig.
	Kubeconfig string
	// Server is the apiserver's bound host:port.
	Server string
	// RuntimeEndpoint is the CRI endpoint the agent uses.
	RuntimeEndpoint string
	// OwnContainerd tells whether berth started that runtime.
	OwnContainerd bool
	// SandboxImage is the pause image of berth's containerd ("" otherwise).
	SandboxImage string
	// ManifestDir is the agent's static pod directory.
	ManifestDir string
	// NodeName is the agent's Node.
	NodeName string
	// PodCIDR is the node's pod subnet.
	PodCIDR string
	// IngressHTTP and IngressHTTPS are the ingress controller's listen
	// addresses; empty when it does not run.
	IngressHTTP, IngressHTTPS string
}

// Validate fills the defaults and checks the fields, naming the bad one;
// errors wrap errdefs.ErrInvalidArgument.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return invalid("DataDir (--data-dir)", "%v", err)
	}
	c.DataDir = abs
	if err := c.validateNetwork(); err != nil {
		return err
	}
	if c.Listen == "" {
		c.Listen = server.DefaultListen
	}
	if c.EtcdCompactionInterval < 0 {
		return invalid("EtcdCompactionInterval (--etcd-compaction-interval)", "%s is negative", c.EtcdCompactionInterval)
	}
	if c.EtcdCompactionInterval == 0 {
		c.EtcdCompactionInterval = server.DefaultCompactionInterval
	}
	if c.ReadOnlyAddress == "" {
		c.ReadOnlyAddress = "127.0.0.1"
	}
	if c.NodeName == "" {
		host, err := os.Hostname()
		if err != nil {
			return invalid("NodeName (--node-name)", "not set and the host name is unknown: %v", err)
		}
		c.NodeName = strings.ToLower(host)
	}
	if err := c.validatePorts(); err != nil {
		return err
	}
	if err := c.Registries.Validate(); err != nil {
		return fmt.Errorf("cluster config: Registries (--registries): %w", err)
	}
	if _, ok := c.Registries.Mirrors[PauseRegistryHost]; ok {
		return invalid("Registries (--registries)", "mirrors[%q] is berth's own (the pause image); use another name", PauseRegistryHost)
	}
	if c.RuntimeEndpoint == "" && c.PauseBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return invalid("PauseBinary (--pause-binary)", "not set and the executable's directory is unknown: %v", err)
		}
		c.PauseBinary = filepath.Join(filepath.Dir(exe), "pause")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.KubeletConfig != "" {
		// Read now, so a bad file stops berth up before anything starts.
		if _, err := agentConfig(c, "", "", nil); err != nil {
			return err
		}
	}
	return nil
}

// invalid is the error of a bad field.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("cluster config: %s: %s: %w", field, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
}

// validateNetwork fills and checks the pod network's fields.
func (c *Config) validateNetwork() error {
	if c.PodCIDR == "" {
		c.PodCIDR = DefaultPodCIDR
	}
	p, err := netip.ParsePrefix(c.PodCIDR)
	if err != nil || p.Masked() != p || !p.Addr().Is4() {
		return invalid("PodCIDR (--pod-cidr)", "%q is not an IPv4 network CIDR such as %s", c.PodCIDR, DefaultPodCIDR)
	}
	if p.Bits() > 30 {
		return invalid("PodCIDR (--pod-cidr)", "%q is smaller than a /30", c.PodCIDR)
	}
	if c.CNIBridge == "" {
		c.CNIBridge = DefaultCNIBridge
	}
	if c.ResolvConf == "" {
		c.ResolvConf = DefaultResolvConf
	}
	if len(c.CNIBridge) > 15 {
		return invalid("CNIBridge (--cni-bridge)", "%q is longer than an interface name's 15 bytes", c.CNIBridge)
	}
	if c.CNIConfDir == "" {
		if c.RuntimeEndpoint == "" {
			c.CNIConfDir = filepath.Join(c.DataDir, "cni", "net.d")
		} else {
			c.CNIConfDir = agent.DefaultCNIConfDir
		}
	}
	if c.CNIBinDir == "" {
		for _, d := range agent.DefaultCNIBinDirs {
			if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
				c.CNIBinDir = d
				break
			}
		}
		if c.CNIBinDir == "" {
			return invalid("CNIBinDir (--cni-bin-dir)", "no CNI bridge plugin in %v (Debian: apt-get install containernetworking-plugins)", agent.DefaultCNIBinDirs)
		}
	}
	return nil
}

// validatePorts checks the agent's and the ingress controller's ports.
func (c *Config) validatePorts() error {
	if c.ReadOnlyPort < 0 || c.ReadOnlyPort > 65535 {
		return invalid("ReadOnlyPort (--read-only-port)", "%d is not a port", c.ReadOnlyPort)
	}
	if c.KubeletPort == 0 {
		c.KubeletPort = agent.DefaultKubeletPort
	}
	if c.KubeletPort < 0 || c.KubeletPort > 65535 {
		return invalid("KubeletPort (--kubelet-port)", "%d is not a port", c.KubeletPort)
	}
	if c.IngressHTTPPort == 0 {
		c.IngressHTTPPort = DefaultIngressHTTPPort
	}
	if c.IngressHTTPSPort == 0 {
		c.IngressHTTPSPort = DefaultIngressHTTPSPort
	}
	for _, p := range []struct {
		field string
		port  int
	}{{"IngressHTTPPort (--ingress-http-port)", c.IngressHTTPPort}, {"IngressHTTPSPort (--ingress-https-port)", c.IngressHTTPSPort}} {
		if p.port < 0 || p.port > 65535 {
			return invalid(p.field, "%d is not a port", p.port)
		}
	}
	if c.IngressHTTPPort == c.IngressHTTPSPort {
		return invalid("IngressHTTPSPort (--ingress-https-port)", "%d is also the HTTP port", c.IngressHTTPSPort)
	}
	return nil
}

// ManifestDir is DATA-DIR/manifests.
func (c Config) ManifestDir() string { return filepath.Join(c.DataDir, "manifests") }
