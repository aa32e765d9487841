// Package cluster drives `berth server` as a whole control plane, run as a
// process: the apiserver with the controller manager and the scheduler
// inside it. Clients are real kubectl (/usr/bin/kubectl) and client-go.
// Nodes are only Node objects whose status and Leases the tests write (no
// agent); where pods must become ready the tests write their status.
package cluster

import (
	"berth/internal/prereq"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubectlBin is the kubectl the tests drive.
const kubectlBin = "/usr/bin/kubectl"

var (
	binOnce sync.Once
	binPath string
	binErr  error
	// builtDir holds the binary built when BERTH_BIN is unset; removed at exit.
	builtDir string
	// shared is the package's server, started by TestMain.
	shared *serverProc
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "berth-cluster-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	defer func() {
		if builtDir != "" {
			os.RemoveAll(builtDir)
		}
	}()
	shared, err = startServer(filepath.Join(dir, "server"), "--listen", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting berth server:", err)
		return 1
	}
	code := m.Run()
	shared.stop()
	if code != 0 {
		logs := shared.log.String()
		if len(logs) > 30000 {
			logs = logs[len(logs)-30000:]
		}
		fmt.Fprintf(os.Stderr, "--- shared server log (tail) ---\n%s\n", logs)
	}
	return code
}

// berthBinary is $BERTH_BIN, or ./cmd/berth built once.
func berthBinary() (string, error) {
	binOnce.Do(func() {
		if b := os.Getenv("BERTH_BIN"); b != "" {
			binPath = b
			return
		}
		dir, err := os.MkdirTemp("", "berth-cluster-bin-")
		if err != nil {
			binErr = err
			return
		}
		builtDir = dir
		binPath = filepath.Join(dir, "berth")
		cmd := exec.Command("go", "build", "-o", binPath, "berth/cmd/berth")
		cmd.Stderr = os.Stderr
		binErr = cmd.Run()
	})
	return binPath, binErr
}

// serverProc is a running `berth server`.
type serverProc struct {
	dir  string
	addr string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// startServer runs `berth server --data-dir dir args...` and waits for it
// to write its address.
func startServer(dir string, args ...string) (*serverProc, error) {
	bin, err := berthBinary()
	if err != nil {
		return nil, fmt.Errorf("building berth: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	addrFile := filepath.Join(dir, "listen-address")
	_ = os.Remove(addrFile)
	cmd := exec.Command(bin, append([]string{"server", "--data-dir", dir}, args...)...)
	// If the test binary dies (a panic), the server goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logBuf := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logBuf, logBuf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serverProc{dir: dir, cmd: cmd, log: logBuf, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(data)) > 0 {
			p.addr = strings.TrimSpace(string(data))
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("berth server exited: %s", logBuf.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	p.stop()
	return nil, fmt.Errorf("berth server not ready after 90s: %s", logBuf.String())
}

// startTestServer is startServer for one test, stopped at its end.
func startTestServer(t *testing.T, args ...string) *serverProc {
	t.Helper()
	p, err := startServer(filepath.Join(t.TempDir(), "server"), append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("server %s log:\n%s", p.dir, p.log.String())
		}
	})
	return p
}

// stop sends SIGTERM and waits (SIGKILL after 30s); it reports whether the
// server stopped on SIGTERM.
func (p *serverProc) stop() bool {
	if p == nil || p.cmd.Process == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return false
	}
}

// identity is the server's identity in the Leases, from its log.
func (p *serverProc) identity(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(p.log.String(), "\n") {
		if !strings.Contains(line, "berth server serving") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "identity="); ok {
				return strings.Trim(id, `"`)
			}
		}
	}
	t.Fatalf("no identity in the server log:\n%s", p.log.String())
	return ""
}

func (p *serverProc) kubeconfig() string { return filepath.Join(p.dir, "admin.kubeconfig") }

// restConfig is the admin client configuration.
func (p *serverProc) restConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig())
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg
}

func (p *serverProc) client(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(p.restConfig(t))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return cs
}

// kubectl runs kubectl against the server: stdout, stderr and the error.
func (p *serverProc) kubectl(t testing.TB, stdin string, args ...string) (string, string, error) {
	t.Helper()
	requireKubectl(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", p.kubeconfig()}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(p.dir, "kubecache"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// mustKubectl is kubectl that fails the test on error.
func (p *serverProc) mustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := p.kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\nstdout: %s\nstderr: %s", args, err, out, errOut)
	}
	return out
}

// requireKubectl fails the test under CI=true when kubectl is missing,
// else skips it.
func requireKubectl(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(kubectlBin); err != nil {
		prereq.Missing(t, "kubectl not installed (%s)", kubectlBin)
	}
}

// syncBuffer is a bytes.Buffer safe for the process's two writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
