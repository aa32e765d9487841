package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"berth/agent/bootstrap"
	"berth/integration/nodeenv"
)

// proc is a running berth process, stopped (SIGTERM, SIGKILL after 30 s)
// when the test ends; its output is logged if the test failed.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(berthBinary(t), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &proc{name: name, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			out := p.log.String()
			if len(out) > 20000 {
				out = out[len(out)-20000:]
			}
			t.Logf("--- %s log (tail) ---\n%s", name, out)
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// cluster is one server and one agent on the package's containerd.
type cluster struct {
	env     *nodeenv.Env
	dataDir string
	// addr is the server's host:port.
	addr     string
	node     string
	server   *proc
	agent    *proc
	client   kubernetes.Interface
	cacheDir string
	// manifests is the agent's static pod directory.
	manifests string
	// kubeletPort is the agent API's port on 127.0.0.1.
	kubeletPort int
}

// startCluster runs `berth server` (allocating node pod CIDRs from the
// environment's PodCIDR) and `berth agent --server` joining it with the
// join token, its serving certificate signed by the cluster CA.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	env := nodeenv.Current()
	prefix, err := netip.ParsePrefix(env.PodCIDR)
	if err != nil {
		t.Fatal(err)
	}
	c := startServer(t, env.PodCIDR, prefix.Bits())
	c.env, c.node = env, "e2e-node"
	dir := t.TempDir()
	c.manifests = filepath.Join(dir, "manifests")
	if err := os.MkdirAll(c.manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	c.agent, c.kubeletPort = c.startAgent(t, env, c.node, filepath.Join(dir, "agent"), "/berth-e2e",
		"--pod-manifest-path", c.manifests, "--manifest-rescan", "2s")
	return c
}

// startServer runs `berth server` allocating node pod CIDRs of maskBits
// from clusterCIDR, and waits until it serves.
func startServer(t *testing.T, clusterCIDR string, maskBits int) *cluster {
	t.Helper()
	requireKubectl(t)
	dir := t.TempDir()
	c := &cluster{dataDir: filepath.Join(dir, "server"), cacheDir: filepath.Join(dir, "kubecache")}
	c.server = startProc(t, "berth server", "server", "--data-dir", c.dataDir, "--listen", "127.0.0.1:0",
		"--cluster-cidr", clusterCIDR, "--node-cidr-mask-size", strconv.Itoa(maskBits))
	waitFor(t, 90*time.Second, "berth server to serve", func() (bool, string) {
		if c.server.exited() {
			t.Fatalf("berth server exited:\n%s", c.server.log.String())
		}
		data, err := os.ReadFile(filepath.Join(c.dataDir, "listen-address"))
		c.addr = strings.TrimSpace(string(data))
		return err == nil && c.addr != "", fmt.Sprint(err)
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	if c.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return c
}

// startAgent runs `berth agent --server` for node on env's containerd and
// bridge, with its state in rootDir and its pods' cgroups under
// cgroupRoot: the process and its agent API port on 127.0.0.1.
func (c *cluster) startAgent(t *testing.T, env *nodeenv.Env, node, rootDir, cgroupRoot string, extra ...string) (*proc, int) {
	t.Helper()
	// With the CSR API the agent gets its serving certificate from the
	// cluster's signer; without it, one signed here with the CA key.
	var servingFlags []string
	if !bootstrap.ServesCSRs(c.client) {
		certFile, keyFile, err := bootstrap.IssueServingCert(bootstrap.ServingCert{
			CACertFile: filepath.Join(c.dataDir, "ca.crt"), CAKeyFile: filepath.Join(c.dataDir, "ca.key"),
			NodeName: node, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Dir: filepath.Join(rootDir, "pki"),
		})
		if err != nil {
			t.Fatal(err)
		}
		servingFlags = []string{"--tls-cert-file", certFile, "--tls-private-key-file", keyFile}
	}
	port := freePort(t)
	args := append([]string{"agent",
		"--server", "https://" + c.addr, "--token-file", filepath.Join(c.dataDir, "agent-token"), "--ca-file", filepath.Join(c.dataDir, "ca.crt"),
		"--container-runtime-endpoint", env.Endpoint, "--root-dir", rootDir, "--pod-log-dir", filepath.Join(rootDir, "logs"),
		"--cni-conf-dir", env.CNIConfDir, "--cni-bin-dir", strings.Join(env.CNIBinDirs, ":"), "--cni-bridge", env.BridgeName,
		"--cgroup-root", cgroupRoot, "--node-name", node, "--node-ip", "127.0.0.1",
		"--read-only-port", "0", "--kubelet-address", "127.0.0.1", "--kubelet-port", strconv.Itoa(port),
		"--image-backoff-initial", "1s", "--image-backoff-max", "4s", "--container-backoff-initial", "1s", "--container-backoff-max", "2s",
		"--log-level", "debug"}, servingFlags...)
	return startProc(t, "berth agent "+node, append(args, extra...)...), port
}

func (c *cluster) kubeconfig() string { return filepath.Join(c.dataDir, "admin.kubeconfig") }

// kubectl runs kubectl against the server: stdout, stderr, the error.
func (c *cluster) kubectl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", c.kubeconfig()}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+c.cacheDir)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

func (c *cluster) mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := c.kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\nstdout: %s\nstderr: %s", args, err, out, errOut)
	}
	return out
}

// waitFor polls cond every 200 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last: %s)", timeout, what, last)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
