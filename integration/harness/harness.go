// Package harness runs berth as its users do, for integration tests: the
// `berth` binary as processes (`berth server`, `berth agent --server`) on
// the package's containerd (integration/nodeenv), and real kubectl as the
// client. Everything it starts is stopped by PID when the test ends.
package harness

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"berth/integration/nodeenv"
	"berth/internal/prereq"
	"berth/internal/syncbuf"
)

// KubectlRelease is the release of upstream kubectl the tests drive
// (hack/kubectl builds it; see RequireKubectl).
const KubectlRelease = "1.32"

var (
	binOnce  sync.Once
	binPath  string
	binErr   error
	builtDir string
)

// Main is TestMain for a package that runs berth processes: it starts the
// package's containerd with opts (nodeenv.Run), runs the tests, and
// removes the binary Binary built, if any.
func Main(m *testing.M, opts nodeenv.Options) {
	code := nodeenv.Run(m, opts)
	RemoveBinary()
	os.Exit(code)
}

// RemoveBinary removes the binary BuildBinary built, if any: for a
// TestMain that does not use Main.
func RemoveBinary() {
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
}

// Binary is $BERTH_BIN, or ./cmd/berth built once for the test process.
func Binary(tb testing.TB) string {
	tb.Helper()
	bin, err := BuildBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// BuildBinary is Binary for TestMain, before any test runs: the path of
// $BERTH_BIN, or of ./cmd/berth built once (removed by Main).
func BuildBinary() (string, error) {
	binOnce.Do(func() {
		if b := os.Getenv("BERTH_BIN"); b != "" {
			binPath = b
			return
		}
		dir, err := os.MkdirTemp("", "berth-harness-bin-")
		if err != nil {
			binErr = err
			return
		}
		builtDir = dir
		binPath = filepath.Join(dir, "berth")
		flags, err := KubeLDFlags()
		if err != nil {
			binErr = err
			return
		}
		cmd := exec.Command("go", "build", "-ldflags", flags, "-o", binPath, "berth/cmd/berth")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			binErr = fmt.Errorf("go build: %w: %s", err, out.String())
		}
	})
	return binPath, binErr
}

// KubeLDFlags are the -ldflags of the Makefile's berth build: the
// Kubernetes release `berth kubectl version` reports is that of the
// k8s.io/kubectl module, v0.X.Y → v1.X.Y.
func KubeLDFlags() (string, error) {
	kube, err := ModuleRelease("k8s.io/kubectl")
	if err != nil {
		return "", err
	}
	minor := strings.Split(kube, ".")[1]
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags, "-X", pkg+".gitVersion="+kube, "-X", pkg+".gitMajor=1", "-X", pkg+".gitMinor="+minor)
	}
	return strings.Join(flags, " "), nil
}

// ModuleRelease is the Kubernetes release of a staging module berth
// requires (its go.mod version v0.X.Y is Kubernetes v1.X.Y): what berth
// reports as its version. Test binaries carry no module information, so
// tests ask the go command.
func ModuleRelease(module string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	v := strings.TrimSpace(string(out))
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) != 3 || parts[0] != "0" {
		return "", fmt.Errorf("%s version %q is not v0.X.Y", module, v)
	}
	return "v1." + parts[1] + "." + parts[2], nil
}

// RequireKubectl returns the path of kubectl KubectlRelease, built by
// hack/kubectl (make kubectls). Missing, the test fails under CI=true and is
// skipped elsewhere.
func RequireKubectl(tb testing.TB) string {
	tb.Helper()
	return prereq.Kubectl(tb, KubectlRelease)
}

// Proc is a running berth process.
type Proc struct {
	name string
	cmd  *exec.Cmd
	log  *syncbuf.Buffer
	done chan struct{}
	stop sync.Once
	// stoppedClean is Stop's result.
	stoppedClean bool
}

// Launch runs `berth args...` for TestMain, before any test runs: the
// caller stops it. The process is killed if the test binary dies.
func Launch(name string, args ...string) (*Proc, error) {
	bin, err := BuildBinary()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &Proc{name: name, cmd: cmd, log: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Start runs `berth args...`; the process is stopped when the test ends
// (SIGTERM, SIGKILL after 30 s) and its output logged if the test failed.
func Start(tb testing.TB, name string, args ...string) *Proc {
	tb.Helper()
	p, err := Launch(name, args...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.Stop()
		if tb.Failed() {
			out := p.Log()
			if len(out) > 20000 {
				out = out[len(out)-20000:]
			}
			tb.Logf("--- %s log (tail) ---\n%s", name, out)
		}
	})
	return p
}

// Stop sends SIGTERM and waits for the process to exit, killing it after
// 30 s; it reports whether the process ended without being killed.
// Stopping twice is harmless.
func (p *Proc) Stop() bool {
	p.stop.Do(func() {
		p.stoppedClean = true
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			p.stoppedClean = false
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p.stoppedClean
}

// Kill SIGKILLs the process, as a crash would, and waits for it to end;
// Stop afterwards is harmless.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// ListenAddress waits until `berth server` with dataDir has written the
// address it serves on, and returns it; an error if the process exits or
// timeout passes first.
func (p *Proc) ListenAddress(dataDir string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		if data, err := os.ReadFile(filepath.Join(dataDir, "listen-address")); err == nil && len(bytes.TrimSpace(data)) > 0 {
			return string(bytes.TrimSpace(data)), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s not serving after %s:\n%s", p.name, timeout, p.Log())
		}
		select {
		case <-p.done:
			return "", fmt.Errorf("%s exited: %v\n%s", p.name, p.cmd.ProcessState, p.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Pid is the process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Log is what the process has written to stdout and stderr so far.
func (p *Proc) Log() string { return p.log.String() }

// WaitFor polls cond every 200 ms until it holds, failing the test after
// timeout with cond's last message.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s (last: %s)", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Eventually polls cond every 50 ms until it holds, failing the test after
// 60 s with cond's last error: for conditions read through the API.
func Eventually(tb testing.TB, what string, cond func() (bool, error)) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("timed out waiting for %s (last error: %v)", what, lastErr)
}

// HTTPGet is the body of GET url (30 s at most); a status other than 200
// is an error with the status and the body.
func HTTPGet(url string) (string, error) {
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}

// FreePort is a TCP port on 127.0.0.1 free at the time of the call.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server is a `berth server` started for a whole test package (from
// TestMain) or a test: its process, data dir and address.
type Server struct {
	*Proc
	// Dir is the server's data dir; Addr its host:port.
	Dir, Addr string
}

// LaunchServer runs `berth server --data-dir dir args...` and waits until it
// serves; the caller stops it.
func LaunchServer(dir string, args ...string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	_ = os.Remove(filepath.Join(dir, "listen-address"))
	proc, err := Launch("berth server", append([]string{"server", "--data-dir", dir}, args...)...)
	if err != nil {
		return nil, err
	}
	s := &Server{Proc: proc, Dir: dir}
	if s.Addr, err = proc.ListenAddress(dir, 90*time.Second); err != nil {
		proc.Stop()
		return nil, err
	}
	return s, nil
}

// Kubeconfig is the path of the server's admin kubeconfig.
func (s *Server) Kubeconfig() string { return filepath.Join(s.Dir, "admin.kubeconfig") }

// RESTConfig is the admin client configuration, with room for the tests'
// bursts of requests.
func (s *Server) RESTConfig(tb testing.TB) *rest.Config {
	tb.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig())
	if err != nil {
		tb.Fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	return cfg
}

// Client is an admin clientset.
func (s *Server) Client(tb testing.TB) *kubernetes.Clientset {
	tb.Helper()
	cs, err := kubernetes.NewForConfig(s.RESTConfig(tb))
	if err != nil {
		tb.Fatalf("client: %v", err)
	}
	return cs
}

// LogTail is the end of the process's log, for a failed package's output.
func (p *Proc) LogTail() string {
	const max = 30000
	out := p.Log()
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// DropPageCache evicts a file's pages from the page cache, so the berth
// processes a benchmark starts map their binary as read back from disk, as
// on a node where it was installed long before: the page cache a fresh
// build leaves holds large folios that are mapped whole, which inflates the
// resident set of every process of that binary.
func DropPageCache(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // dirty pages stay in the cache
		tb.Fatalf("fsync %s: %v", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		tb.Fatalf("fadvise %s: %v", path, err)
	}
}

// LockDir holds the cross-process locks of the test packages' pod subnets.
const LockDir = "/run/berth-test"

// ClaimSubnet locks a free 10.OCTET.N.0/24 and its bridge "PREFIXN" for the
// test's life: each package that runs its own cluster uses an OCTET of its
// own, so parallel packages never share a subnet or a bridge. A bridge that
// already exists belongs to someone else and is passed over.
func ClaimSubnet(tb testing.TB, octet int, prefix string) (bridge, cidr string) {
	tb.Helper()
	if err := os.MkdirAll(LockDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for n := 1; n <= 254; n++ {
		f, err := os.OpenFile(filepath.Join(LockDir, fmt.Sprintf("%s-subnet-%d.lock", prefix, n)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			tb.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue // another live test holds it
		}
		bridge = prefix + strconv.Itoa(n)
		if _, err := netlink.LinkByName(bridge); err == nil {
			f.Close()
			continue
		}
		tb.Cleanup(func() { f.Close() })
		return bridge, fmt.Sprintf("10.%d.%d.0/24", octet, n)
	}
	tb.Fatalf("no free 10.%d.N.0/24 subnet", octet)
	return "", ""
}
