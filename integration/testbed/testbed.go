// Package testbed runs a multi-node berth cluster on one machine, as real
// as it gets here, for integration tests:
//
//   - an external etcd of three members (embedded in the test process, on
//     loopback);
//   - Servers `berth server` replicas on it, in the host's network
//     namespace, each on an address of its own on the underlay bridge, all
//     with one cluster CA, service-account key and join token;
//   - Nodes nodes, each a network namespace wired to the underlay bridge by
//     a veth pair, with its own containerd (own root, socket, CNI conf dir)
//     and `berth agent` joined with the join token to every server (the
//     last node is given only the first server's URL and learns the others
//     from the default/kubernetes EndpointSlice), whose pod bridge, pod
//     routes and service proxy live in that namespace;
//   - the cluster DNS, in the test process on the underlay bridge's
//     address (startClusterDNS), every agent's --cluster-dns;
//   - in the host's namespace a route to each node's pod CIDR via the node
//     (routeToPods), so the servers reach the pods.
//
// Images (pause, busybox) are built here and pushed into every node's
// containerd from a registry on the host's loopback (the nodes' containerd
// cannot reach it: pods use imagePullPolicy IfNotPresent).
//
// Every name starts with Options.Prefix and every address is in
// Options.Underlay, ClusterCIDR or ServiceCIDR; one test bed at a time per
// prefix (a lock under /run/berth-test), and Start removes what a crashed
// run with that prefix left behind.
package testbed

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"berth/controlplane/serviceaccount"
	"berth/cri"
	"berth/integration/harness"
	"berth/integration/nodeenv"
	"berth/internal/containerd"
	"berth/internal/mountinfo"
	"berth/internal/testimages"
)

// Options configures a test bed; zero values take the defaults.
type Options struct {
	// Nodes and Servers count the agents and the server replicas (3, 2).
	Nodes, Servers int
	// Prefix starts every bridge, netns and veth name ("bmn"): at most 8
	// bytes.
	Prefix string
	// Underlay is the nodes' shared segment (10.254.64.0/24): the host's
	// bridge holds .1, server i holds .2+i, node i .11+i.
	Underlay netip.Prefix
	// ClusterCIDR and MaskBits are the nodes' pod CIDR allocation
	// (10.64.0.0/16, 24); ServiceCIDR the Services' (10.164.0.0/20).
	ClusterCIDR string
	MaskBits    int
	ServiceCIDR string
	// ServerPort is every server's port (6443).
	ServerPort int
	// AgentArgs are extra `berth agent` arguments.
	AgentArgs []string
	// Registries are the nodes' containerd mirrors (k3s's registries.yaml
	// shape); an endpoint on the host's loopback is reached through a relay
	// on the underlay bridge's address.
	Registries containerd.Registries
}

func (o *Options) defaults() error {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Servers == 0 {
		o.Servers = 2
	}
	if o.Prefix == "" {
		o.Prefix = "bmn"
	}
	if len(o.Prefix) > 8 {
		return fmt.Errorf("testbed: Prefix %q: at most 8 bytes (interface names hold 15)", o.Prefix)
	}
	if !o.Underlay.IsValid() {
		o.Underlay = netip.MustParsePrefix("10.254.64.0/24")
	}
	if o.ClusterCIDR == "" {
		o.ClusterCIDR, o.MaskBits = "10.64.0.0/16", 24
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = "10.164.0.0/20"
	}
	if o.ServerPort == 0 {
		o.ServerPort = 6443
	}
	if o.Servers > 9 || o.Nodes > 200 {
		return fmt.Errorf("testbed: at most 9 servers and 200 nodes")
	}
	return nil
}

// Server is one `berth server` replica.
type Server struct {
	*Proc
	// Dir is its data dir; IP its address on the underlay; URL https://IP:port.
	Dir string
	IP  netip.Addr
	URL string
	// args restart it.
	args []string
}

// Node is one node: a network namespace with containerd and an agent.
type Node struct {
	// Name is the Node's name; Netns the namespace's name, NetnsPath its path.
	Name, Netns, NetnsPath string
	// IP is its InternalIP on the underlay.
	IP netip.Addr
	// Dir holds its containerd's and agent's state.
	Dir        string
	Containerd *Proc
	Agent      *Proc
	// Endpoint is its containerd's CRI socket.
	Endpoint string
	// HostLink is the host's end of its veth pair, on the underlay bridge.
	HostLink string
	// agentArgs restart the agent.
	agentArgs []string
}

// Bed is a running test bed.
type Bed struct {
	Opts   Options
	Dir    string
	Bridge string
	// Etcd are the members (nil: lost, LoseEtcdMember), EtcdURL their
	// client URLs.
	Etcd    []*embed.Etcd
	EtcdURL []string
	Servers []*Server
	Nodes   []*Node
	// Client and Config are the admin's, through the first server.
	Client kubernetes.Interface
	Config *rest.Config
	// BusyboxImage is in every node's containerd (pull IfNotPresent).
	BusyboxImage string
	// ClusterDNS is the cluster DNS's address, every agent's --cluster-dns
	// (startClusterDNS).
	ClusterDNS netip.Addr

	bin      string
	etcdCfg  []*embed.Config
	lock     *os.File
	registry *testimages.Registry
	relays   []*relay
	regs     containerd.Registries // Opts.Registries, relayed
	stopDNS  func() error
}

// ServerURLs are every server's URL, comma-separated (`--server`).
func (b *Bed) ServerURLs() string {
	var urls []string
	for _, s := range b.Servers {
		urls = append(urls, s.URL)
	}
	return strings.Join(urls, ",")
}

// Kubeconfig is the admin kubeconfig (through the first server).
func (b *Bed) Kubeconfig() string { return filepath.Join(b.Servers[0].Dir, "admin.kubeconfig") }

// Start builds and starts a test bed; on error it tears down what it made.
func Start(ctx context.Context, opts Options) (bed *Bed, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := nodeenv.CheckPrerequisites(); err != nil {
		return nil, fmt.Errorf("testbed: prerequisites: %w", err)
	}
	if _, err := containerd.LookPath("ctr"); err != nil {
		return nil, fmt.Errorf("testbed: prerequisites: ctr on PATH (Debian: apt-get install containerd): %w", err)
	}
	b := &Bed{Opts: opts, Bridge: opts.Prefix + "0"}
	if b.lock, err = lock(opts.Prefix); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if stopErr := b.Stop(); stopErr != nil {
				err = fmt.Errorf("%w (and tearing down: %v)", err, stopErr)
			}
			bed = nil
		}
	}()
	b.removeLeftovers()
	if b.bin, err = harness.BuildBinary(); err != nil {
		return nil, err
	}
	if b.Dir, err = os.MkdirTemp("", "berth-testbed-"); err != nil {
		return nil, err
	}
	if err := os.Chmod(b.Dir, 0o755); err != nil {
		return nil, err
	}
	addrs := []netip.Prefix{netip.PrefixFrom(b.addr(1), opts.Underlay.Bits())}
	for i := range opts.Servers {
		addrs = append(addrs, netip.PrefixFrom(b.addr(2+i), opts.Underlay.Bits()))
	}
	if err := createBridge(b.Bridge, addrs); err != nil {
		return nil, err
	}
	if b.Etcd, b.etcdCfg, b.EtcdURL, err = StartEtcd(filepath.Join(b.Dir, "etcd"), 3); err != nil {
		return nil, err
	}
	for i := range opts.Servers {
		if err := b.startServer(ctx, i); err != nil {
			return nil, err
		}
	}
	if b.Config, err = clientcmd.BuildConfigFromFlags("", b.Kubeconfig()); err != nil {
		return nil, err
	}
	if b.Client, err = kubernetes.NewForConfig(b.Config); err != nil {
		return nil, err
	}
	if err := b.startClusterDNS(); err != nil {
		return nil, err
	}
	images, err := b.buildImages(ctx)
	if err != nil {
		return nil, err
	}
	if b.regs, err = b.relayRegistries(opts.Registries, b.addr(1)); err != nil {
		return nil, err
	}
	for i := range opts.Nodes {
		if err := b.startNode(ctx, i, images); err != nil {
			return nil, err
		}
	}
	for _, n := range b.Nodes {
		if err := b.waitReady(ctx, n.Name, 2*time.Minute); err != nil {
			return nil, err
		}
		if err := b.routeToPods(ctx, n); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// routeToPods routes the node's pod CIDR via the node in the host's
// namespace, as a machine on the nodes' segment would (host-gw): the
// servers reach pods (pods/proxy, services/proxy) and nothing sent to a pod
// leaves the machine by the host's default route.
func (b *Bed) routeToPods(ctx context.Context, n *Node) error {
	node, err := b.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("testbed: %s: %w", n.Name, err)
	}
	cidr, err := netip.ParsePrefix(node.Spec.PodCIDR)
	if err != nil {
		return fmt.Errorf("testbed: %s: spec.podCIDR: %w", n.Name, err)
	}
	return routeVia(b.Bridge, cidr, n.IP)
}

// addr is the underlay's address number i.
func (b *Bed) addr(i int) netip.Addr {
	a := b.Opts.Underlay.Addr().As4()
	a[3] += byte(i)
	return netip.AddrFrom4(a)
}

// startServer starts replica i; replicas after the first get the first's
// CA, service-account key and join token before their first start.
func (b *Bed) startServer(ctx context.Context, i int) error {
	s := &Server{Dir: filepath.Join(b.Dir, fmt.Sprintf("server%d", i)), IP: b.addr(2 + i)}
	s.URL = "https://" + netip.AddrPortFrom(s.IP, uint16(b.Opts.ServerPort)).String()
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	if i > 0 {
		for _, f := range []string{"ca.crt", "ca.key", serviceaccount.KeyFile, "agent-token"} {
			data, err := os.ReadFile(filepath.Join(b.Servers[0].Dir, f))
			if err != nil {
				return fmt.Errorf("testbed: share %s with replica %d: %w", f, i, err)
			}
			if err := os.WriteFile(filepath.Join(s.Dir, f), data, 0o600); err != nil {
				return err
			}
		}
	}
	s.args = []string{"server", "--data-dir", s.Dir, "--listen", netip.AddrPortFrom(s.IP, uint16(b.Opts.ServerPort)).String(),
		"--advertise-address", s.IP.String(), "--etcd-servers", strings.Join(b.EtcdURL, ","),
		"--cluster-cidr", b.Opts.ClusterCIDR, "--node-cidr-mask-size", strconv.Itoa(b.Opts.MaskBits),
		"--service-cluster-ip-range", b.Opts.ServiceCIDR}
	b.Servers = append(b.Servers, s)
	return b.StartServer(ctx, s)
}

// StartServer (re)starts a server replica and waits until it serves.
func (b *Bed) StartServer(ctx context.Context, s *Server) error {
	_ = os.Remove(filepath.Join(s.Dir, "listen-address"))
	p, err := start("server "+s.IP.String(), "", s.Dir+".log", b.bin, s.args...)
	if err != nil {
		return err
	}
	s.Proc = p
	deadline := time.Now().Add(90 * time.Second)
	for {
		if data, err := os.ReadFile(filepath.Join(s.Dir, "listen-address")); err == nil && len(data) > 0 {
			return nil
		}
		if p.Exited() || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("testbed: server %s not serving:\n%s", s.IP, p.Tail(4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// images are the test images, in a registry on the host's loopback.
type images struct{ pause, busybox string }

func (b *Bed) buildImages(ctx context.Context) (images, error) {
	pauseBin, err := testimages.BuildPause(ctx, "")
	if err != nil {
		return images{}, err
	}
	pause, err := testimages.PauseImage(pauseBin)
	if err != nil {
		return images{}, err
	}
	busybox, err := testimages.BusyboxImage(nodeenv.BusyboxPath)
	if err != nil {
		return images{}, err
	}
	if b.registry, err = testimages.StartRegistry(testimages.RegistryConfig{}); err != nil {
		return images{}, err
	}
	var im images
	if im.pause, err = b.registry.Push(ctx, "berth/pause:1", pause); err != nil {
		return images{}, err
	}
	if im.busybox, err = b.registry.Push(ctx, "berth/busybox:1", busybox); err != nil {
		return images{}, err
	}
	b.BusyboxImage = im.busybox
	return im, nil
}

// startNode makes node i: its namespace, containerd with the images, agent.
func (b *Bed) startNode(ctx context.Context, i int, im images) error {
	p := b.Opts.Prefix
	n := &Node{Name: fmt.Sprintf("node-%d", i+1), Netns: fmt.Sprintf("%s%d", p, i+1), IP: b.addr(11 + i),
		Dir: filepath.Join(b.Dir, fmt.Sprintf("node%d", i+1)), HostLink: fmt.Sprintf("%s%dh", p, i+1)}
	b.Nodes = append(b.Nodes, n)
	var err error
	if n.NetnsPath, err = createNode(n.Netns, b.Bridge, n.HostLink, p+"u", netip.PrefixFrom(n.IP, b.Opts.Underlay.Bits())); err != nil {
		return err
	}
	cfg := containerd.Config{
		Dir: filepath.Join(n.Dir, "containerd"), CNIConfDir: filepath.Join(n.Dir, "net.d"), CNIBinDir: nodeenv.CNIBinDir,
		SandboxImage: im.pause, Registries: b.regs,
	}
	cfg.Socket = filepath.Join(cfg.Dir, "containerd.sock")
	n.Endpoint = cfg.Endpoint()
	if err := os.MkdirAll(cfg.CNIConfDir, 0o755); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	restrict, err := cfg.ResolveRestrictOOMScoreAdj()
	if err != nil {
		return err
	}
	if err := containerd.WriteFiles(cfg, restrict); err != nil {
		return err
	}
	bin, err := containerd.LookPath("containerd")
	if err != nil {
		return err
	}
	if n.Containerd, err = start("containerd "+n.Name, n.NetnsPath, filepath.Join(n.Dir, "containerd.log"), bin, "--config", cfg.ConfigPath()); err != nil {
		return err
	}
	if err := waitCRI(ctx, n); err != nil {
		return err
	}
	for _, ref := range []string{im.pause, im.busybox} {
		if err := pull(ctx, cfg.Socket, ref); err != nil {
			return fmt.Errorf("testbed: %s: %w", n.Name, err)
		}
	}
	// The last node knows only the first server: it learns the others
	// from the default/kubernetes EndpointSlice.
	servers := b.ServerURLs()
	if i == b.Opts.Nodes-1 && i > 0 {
		servers = b.Servers[0].URL
	}
	n.agentArgs = append([]string{"agent",
		"--server", servers, "--token-file", filepath.Join(b.Servers[0].Dir, "agent-token"), "--ca-file", filepath.Join(b.Servers[0].Dir, "ca.crt"),
		"--container-runtime-endpoint", n.Endpoint, "--root-dir", filepath.Join(n.Dir, "agent"), "--pod-log-dir", filepath.Join(n.Dir, "logs"),
		"--cni-conf-dir", cfg.CNIConfDir, "--cni-bin-dir", nodeenv.CNIBinDir, "--cni-bridge", p + "br",
		"--cgroup-root", "/" + n.Netns, "--node-name", n.Name, "--node-ip", n.IP.String(),
		"--read-only-port", "0", "--kubelet-address", n.IP.String(), "--cluster-dns", b.ClusterDNS.String(),
		"--image-backoff-initial", "1s", "--image-backoff-max", "4s", "--container-backoff-initial", "1s", "--container-backoff-max", "2s",
		"--log-level", "debug", "--proxy-cleanup-on-exit",
		// As kind: no disk thresholds, the shared test machine's disk is
		// fuller than the kubelet's defaults allow (every node would be
		// tainted disk-pressure); memory's is kept.
		"--eviction-hard", "memory.available<100Mi"}, b.Opts.AgentArgs...)
	return b.StartAgent(n)
}

// StartAgent (re)starts a node's agent in its namespace.
func (b *Bed) StartAgent(n *Node) error {
	p, err := start("agent "+n.Name, n.NetnsPath, filepath.Join(n.Dir, "agent.log"), b.bin, n.agentArgs...)
	if err != nil {
		return err
	}
	n.Agent = p
	return nil
}

// waitCRI waits for the node's containerd to answer CRI.
func waitCRI(ctx context.Context, n *Node) error {
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := cri.New(ctx, cri.Config{Endpoint: n.Endpoint, ConnectTimeout: 2 * time.Second})
		if err == nil {
			return c.Close()
		}
		if n.Containerd.Exited() || time.Now().After(deadline) {
			return fmt.Errorf("testbed: containerd of %s not answering: %v\n%s", n.Name, err, n.Containerd.Tail(4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pull puts ref into the containerd at socket: ctr fetches in its own
// process (here, where the registry is) and writes into containerd.
func pull(ctx context.Context, socket, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	bin, err := containerd.LookPath("ctr")
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bin, "--address", socket, "--namespace", "k8s.io", "images", "pull", "--plain-http", ref).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr pull %s: %v\n%s", ref, err, out)
	}
	return nil
}

// waitReady waits for the Node to be Ready with a pod CIDR.
func (b *Bed) waitReady(ctx context.Context, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) && ctx.Err() == nil {
		n, err := b.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil && n.Spec.PodCIDR != "" && IsReady(n) {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("podCIDR %q, conditions %+v", n.Spec.PodCIDR, n.Status.Conditions)
		}
		time.Sleep(300 * time.Millisecond)
	}
	for _, n := range b.Nodes {
		if n.Name == name && n.Agent != nil {
			last += "\nagent log:\n" + n.Agent.Tail(6000)
		}
	}
	return fmt.Errorf("testbed: node %s not Ready after %s: %s", name, timeout, last)
}

// IsReady reports the Node's Ready condition True.
func IsReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// Stop tears everything down in order: agents, every pod (through CRI, so
// CNI releases the addresses), containerd, the namespaces, the servers,
// etcd, the bridge, the directory. It reports what it could not undo.
func (b *Bed) Stop() error {
	var errs []error
	for _, n := range b.Nodes {
		if n.Agent != nil {
			n.Agent.Stop(30 * time.Second)
		}
	}
	for _, n := range b.Nodes {
		if n.Containerd != nil && !n.Containerd.Exited() {
			if err := removeAllPods(n.Endpoint); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
			}
			n.Containerd.Stop(15 * time.Second)
		}
		if err := deleteNetns(n.Netns); err != nil {
			errs = append(errs, fmt.Errorf("netns %s: %w", n.Netns, err))
		}
		removeCgroups("/" + n.Netns)
	}
	if b.stopDNS != nil {
		if err := b.stopDNS(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range b.Servers {
		if s.Proc != nil {
			s.Stop(30 * time.Second)
		}
	}
	for _, e := range b.Etcd {
		if e != nil { // nil: lost (LoseEtcdMember)
			e.Close()
		}
	}
	if b.registry != nil {
		_ = b.registry.Close()
	}
	for _, r := range b.relays {
		r.close()
	}
	if err := deleteLink(b.Bridge); err != nil {
		errs = append(errs, fmt.Errorf("bridge %s: %w", b.Bridge, err))
	}
	for _, n := range b.Nodes {
		_ = deleteLink(n.HostLink)
	}
	if b.Dir != "" {
		if err := mountinfo.UnmountAll(b.Dir); err != nil { // the pods' volumes
			errs = append(errs, err)
		}
		if err := os.RemoveAll(b.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if b.lock != nil {
		b.lock.Close()
	}
	return errors.Join(errs...)
}

// removeAllPods stops and removes every sandbox of the containerd at
// endpoint (and so their containers and CNI attachments).
func removeAllPods(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cri.New(ctx, cri.Config{Endpoint: endpoint})
	if err != nil {
		return err
	}
	defer c.Close()
	sandboxes, err := c.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range sandboxes {
		// A shim that exits while containerd stops its container fails the
		// stop with "ttrpc: closed"; containerd then sees the task gone, so
		// the stop is tried again before it counts.
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			if err = c.StopPodSandbox(ctx, s.Id); err == nil {
				err = c.RemovePodSandbox(ctx, s.Id)
			}
			if err == nil {
				break
			}
			time.Sleep(time.Second)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCgroups removes the cgroup directories under root in every
// hierarchy, deepest first (each empty once its pods are gone).
func removeCgroups(root string) {
	mounts, _ := filepath.Glob("/sys/fs/cgroup/*")
	mounts = append(mounts, "/sys/fs/cgroup")
	for _, m := range mounts {
		dir := filepath.Join(m, root)
		var dirs []string
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(dirs[i])
		}
	}
}

// lock takes the prefix's lock, so one test bed at a time uses its names.
func lock(prefix string) (*os.File, error) {
	if err := os.MkdirAll(harness.LockDir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(harness.LockDir, "testbed-"+prefix+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeLeftovers removes the namespaces and bridge of a crashed run with
// this prefix (the lock is held: no live test bed owns them).
func (b *Bed) removeLeftovers() {
	entries, _ := os.ReadDir(containerd.NetnsDir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), b.Opts.Prefix)
		if _, err := strconv.Atoi(rest); ok && err == nil {
			_ = deleteNetns(e.Name())
		}
	}
	_ = deleteLink(b.Bridge)
}

// InNetns runs f in the node's network namespace (on a thread of its own).
func (n *Node) InNetns(f func() error) error { return onOwnThread(n.NetnsPath, f) }
