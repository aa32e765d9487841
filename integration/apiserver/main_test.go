// Package apiserver_test drives `berth server` as a process, with real
// kubectl (1.32 and 1.27) and client-go as its clients.
package apiserver_test

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

// The kubectl versions the tests drive: the system's, and the newest and
// oldest on the machine.
var kubectls = map[string]string{
	"1.32": "/usr/bin/kubectl",
	"1.33": "/usr/lib/google-cloud-sdk/bin/kubectl.1.33",
	"1.27": "/usr/lib/google-cloud-sdk/bin/kubectl.1.27",
}

// apiOnly are the flags of a server running the apiserver alone.
var apiOnly = []string{"--disable", "controllers,scheduler"}

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
	dir, err := os.MkdirTemp("", "berth-apiserver-it-")
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
	// The API alone: no controller or scheduler writes into the objects
	// these tests examine (integration/cluster tests the whole).
	shared, err = startServer(filepath.Join(dir, "server"), "127.0.0.1:0", apiOnly...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting berth server:", err)
		return 1
	}
	defer shared.stop()
	return m.Run()
}

// berthBinary is $BERTH_BIN, or ./cmd/berth built once.
func berthBinary() (string, error) {
	binOnce.Do(func() {
		if b := os.Getenv("BERTH_BIN"); b != "" {
			binPath = b
			return
		}
		dir, err := os.MkdirTemp("", "berth-apiserver-bin-")
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

// startServer runs `berth server --data-dir dir --listen listen extra...`
// and waits for it to write its address.
func startServer(dir, listen string, extra ...string) (*serverProc, error) {
	bin, err := berthBinary()
	if err != nil {
		return nil, fmt.Errorf("building berth: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	addrFile := filepath.Join(dir, "listen-address")
	_ = os.Remove(addrFile)
	args := append([]string{"server", "--data-dir", dir, "--listen", listen}, extra...)
	cmd := exec.Command(bin, args...)
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

// stop sends SIGTERM and waits (SIGKILL after 20s).
func (p *serverProc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *serverProc) kubeconfig() string { return filepath.Join(p.dir, "admin.kubeconfig") }

// restConfig is the admin client configuration.
func (p *serverProc) restConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig())
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
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

// kubectl runs kubectl of a version against the server; it returns
// stdout, stderr and the error.
func (p *serverProc) kubectl(t testing.TB, version string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return p.kubectlEnv(t, version, nil, stdin, args...)
}

// kubectlEnv is kubectl with extra environment variables (KUBE_EDITOR, ...).
func (p *serverProc) kubectlEnv(t testing.TB, version string, env []string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	bin := requireKubectl(t, version)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", p.kubeconfig()}, args...)...)
	cmd.Env = append(append(os.Environ(), "KUBECACHEDIR="+filepath.Join(p.dir, "kubecache-"+version)), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// mustKubectl is kubectl that fails the test on error.
func (p *serverProc) mustKubectl(t testing.TB, version, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := p.kubectl(t, version, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s %v: %v\nstdout: %s\nstderr: %s", version, args, err, out, errOut)
	}
	return out
}

// requireKubectl returns the kubectl binary of a version. Missing: the
// test fails under CI=true, else it is skipped.
func requireKubectl(t testing.TB, version string) string {
	t.Helper()
	bin := kubectls[version]
	if _, err := os.Stat(bin); err != nil {
		prereq.Missing(t, "kubectl %s not installed (%s)", version, bin)
	}
	return bin
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

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T, p *serverProc) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", ".", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	p.mustKubectl(t, "1.32", "", "create", "namespace", name)
	t.Cleanup(func() { _, _, _ = p.kubectl(t, "1.32", "", "delete", "namespace", name, "--wait=false") })
	return name
}
