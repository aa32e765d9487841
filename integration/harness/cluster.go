package harness

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"berth/agent/bootstrap"
	"berth/integration/nodeenv"
	"berth/internal/syncbuf"
)

// Cluster is a `berth server` and the agents joined to it.
type Cluster struct {
	// Env is the containerd environment of the cluster's first agent.
	Env *nodeenv.Env
	// DataDir is the server's data dir (CA, admin kubeconfig, agent token).
	DataDir string
	// Addr is the server's host:port.
	Addr string
	// Node is the first agent's node name.
	Node string
	// Server and Agent are the processes.
	Server, Agent *Proc
	// Client is a client-go clientset with the admin credential.
	Client kubernetes.Interface
	// Config is the admin REST config behind Client.
	Config *rest.Config
	// Manifests is the first agent's static pod directory.
	Manifests string
	// AgentRootDir is the first agent's --root-dir.
	AgentRootDir string
	// KubeletPort is the first agent's API port on 127.0.0.1.
	KubeletPort int

	kubectl, cacheDir string
	// serverArgs and agentArgs start the server and the first agent again.
	serverArgs, agentArgs []string
}

// ServerOptions configures StartServer.
type ServerOptions struct {
	// ClusterCIDR and MaskBits are the node pod CIDR allocation
	// (--cluster-cidr, --node-cidr-mask-size); empty: the package env's
	// PodCIDR as the single node CIDR.
	ClusterCIDR string
	MaskBits    int
	// Args are extra `berth server` arguments.
	Args []string
}

// ClusterOptions configures StartCluster.
type ClusterOptions struct {
	// ServerArgs and AgentArgs are extra arguments for the two processes.
	ServerArgs, AgentArgs []string
}

// StartCluster runs `berth server` (node pod CIDRs from the environment's
// PodCIDR) and one `berth agent --server` named "e2e-node" joining it with
// the join token, with a static pod directory, on nodeenv.Current().
func StartCluster(tb testing.TB, opts ClusterOptions) *Cluster {
	tb.Helper()
	env := nodeenv.Current()
	c := StartServer(tb, ServerOptions{Args: opts.ServerArgs})
	c.Env, c.Node = env, "e2e-node"
	dir := tb.TempDir()
	c.Manifests = filepath.Join(dir, "manifests")
	if err := os.MkdirAll(c.Manifests, 0o755); err != nil {
		tb.Fatal(err)
	}
	c.AgentRootDir = filepath.Join(dir, "agent")
	c.agentArgs = append([]string{"--pod-manifest-path", c.Manifests, "--manifest-rescan", "2s"}, opts.AgentArgs...)
	c.Agent, c.KubeletPort = c.StartAgent(tb, env, c.Node, c.AgentRootDir, "/berth-"+env.BridgeName, c.agentArgs...)
	return c
}

// RestartAgent ends StartCluster's agent — SIGKILLed when kill is set,
// else stopped — and starts it again on the same root dir with the same
// arguments (and a new agent API port).
func (c *Cluster) RestartAgent(tb testing.TB, kill bool) {
	tb.Helper()
	if kill {
		c.Agent.Kill()
	} else {
		c.Agent.Stop()
	}
	c.Agent, c.KubeletPort = c.StartAgent(tb, c.Env, c.Node, c.AgentRootDir, "/berth-"+c.Env.BridgeName, c.agentArgs...)
}

// RestartServer starts `berth server` again, after its process ended, on
// the same data dir and address, and waits until it serves.
func (c *Cluster) RestartServer(tb testing.TB) {
	tb.Helper()
	c.Server.Stop()
	c.Server = Start(tb, "berth server", append(c.serverArgs, "--listen", c.Addr)...)
	if _, err := c.Server.ListenAddress(c.DataDir, 90*time.Second); err != nil {
		tb.Fatal(err)
	}
}

// StartServer runs `berth server` on 127.0.0.1 and waits until it serves.
func StartServer(tb testing.TB, opts ServerOptions) *Cluster {
	tb.Helper()
	kubectl := RequireKubectl(tb)
	if opts.ClusterCIDR == "" {
		env := nodeenv.Current()
		prefix, err := netip.ParsePrefix(env.PodCIDR)
		if err != nil {
			tb.Fatal(err)
		}
		opts.ClusterCIDR, opts.MaskBits = env.PodCIDR, prefix.Bits()
	}
	dir := tb.TempDir()
	c := &Cluster{DataDir: filepath.Join(dir, "server"), kubectl: kubectl, cacheDir: filepath.Join(dir, "kubecache")}
	args := append([]string{"server", "--data-dir", c.DataDir, "--listen", "127.0.0.1:0",
		"--cluster-cidr", opts.ClusterCIDR, "--node-cidr-mask-size", strconv.Itoa(opts.MaskBits)}, opts.Args...)
	c.serverArgs = args
	c.Server = Start(tb, "berth server", args...)
	addr, err := c.Server.ListenAddress(c.DataDir, 90*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	c.Addr = addr
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		tb.Fatal(err)
	}
	c.Config = cfg
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		tb.Fatal(err)
	}
	return c
}

// StartAgent runs `berth agent --server` for node on env's containerd and
// bridge, with its state in rootDir and its pods' cgroups under
// cgroupRoot: the process and its agent API port on 127.0.0.1.
func (c *Cluster) StartAgent(tb testing.TB, env *nodeenv.Env, node, rootDir, cgroupRoot string, extra ...string) (*Proc, int) {
	tb.Helper()
	// With the CSR API the agent gets its serving certificate from the
	// cluster's signer; without it, one signed here with the CA key.
	var servingFlags []string
	if !bootstrap.ServesCSRs(c.Client) {
		certFile, keyFile, err := bootstrap.IssueServingCert(bootstrap.ServingCert{
			CACertFile: filepath.Join(c.DataDir, "ca.crt"), CAKeyFile: filepath.Join(c.DataDir, "ca.key"),
			NodeName: node, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Dir: filepath.Join(rootDir, "pki"),
		})
		if err != nil {
			tb.Fatal(err)
		}
		servingFlags = []string{"--tls-cert-file", certFile, "--tls-private-key-file", keyFile}
	}
	port := FreePort(tb)
	args := append([]string{"agent",
		"--server", "https://" + c.Addr, "--token-file", filepath.Join(c.DataDir, "agent-token"), "--ca-file", filepath.Join(c.DataDir, "ca.crt"),
		"--container-runtime-endpoint", env.Endpoint, "--root-dir", rootDir, "--pod-log-dir", filepath.Join(rootDir, "logs"),
		"--cni-conf-dir", env.CNIConfDir, "--cni-bin-dir", strings.Join(env.CNIBinDirs, ":"), "--cni-bridge", env.BridgeName,
		"--cgroup-root", cgroupRoot, "--node-name", node, "--node-ip", "127.0.0.1",
		"--read-only-port", "0", "--kubelet-address", "127.0.0.1", "--kubelet-port", strconv.Itoa(port),
		"--image-backoff-initial", "1s", "--image-backoff-max", "4s", "--container-backoff-initial", "1s", "--container-backoff-max", "2s",
		"--log-level", "debug",
		// As kind: no disk thresholds, the shared test machine's disk is
		// fuller than the kubelet's defaults allow (its node would be
		// tainted disk-pressure and its pods evicted); memory's is kept.
		"--eviction-hard", "memory.available<100Mi",
		// Tests leave no table behind; a test of restarts keeps it with
		// --proxy-cleanup-on-exit=false in extra.
		"--proxy-cleanup-on-exit"}, servingFlags...)
	return Start(tb, "berth agent "+node, append(args, extra...)...), port
}

// Kubeconfig is the path of the admin kubeconfig.
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.DataDir, "admin.kubeconfig") }

// Kubectl runs kubectl with the admin kubeconfig: stdout, stderr, the error.
func (c *Cluster) Kubectl(tb testing.TB, stdin string, args ...string) (string, string, error) {
	tb.Helper()
	return c.kubectlTool().Run(stdin, args...)
}

// WaitPod polls the pod default/NAME until cond holds for it (a pod not
// found does not), failing the test after timeout with what and cond's
// last message; it returns the pod.
func (c *Cluster) WaitPod(tb testing.TB, name string, timeout time.Duration, what string, cond func(p *corev1.Pod) (bool, string)) *corev1.Pod {
	tb.Helper()
	var pod *corev1.Pod
	WaitFor(tb, timeout, what, func() (bool, string) {
		p, err := c.Client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return cond(p)
	})
	return pod
}

// StreamKubectl is Kubectl.Stream with the admin kubeconfig.
func (c *Cluster) StreamKubectl(tb testing.TB, timeout time.Duration, args ...string) (*bufio.Scanner, *syncbuf.Buffer) {
	tb.Helper()
	return c.kubectlTool().Stream(tb, timeout, args...)
}

func (c *Cluster) kubectlTool() Kubectl {
	return Kubectl{Bin: c.kubectl, Args: []string{"--kubeconfig", c.Kubeconfig()}, Env: []string{"KUBECACHEDIR=" + c.cacheDir}}
}

// MustKubectl is Kubectl failing the test on error; it returns stdout.
func (c *Cluster) MustKubectl(tb testing.TB, stdin string, args ...string) string {
	tb.Helper()
	return c.kubectlTool().MustRun(tb, stdin, args...)
}
