package containerd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/internal/errdefs"
)

// Containerd is a configured containerd instance; Run supervises it.
type Containerd struct {
	cfg      Config
	restrict bool
	ready    chan struct{}
	version  string
	pid      atomic.Int64
}

// New validates cfg, resolves RestrictOOMScoreAdj and finds the binary.
func New(cfg Config) (*Containerd, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	restrict, err := cfg.ResolveRestrictOOMScoreAdj()
	if err != nil {
		return nil, err
	}
	if cfg.Binary == "" {
		bin, err := LookPath("containerd")
		if err != nil {
			return nil, fmt.Errorf("containerd config: Binary: containerd not found on PATH (Debian: apt-get install containerd): %w", errdefs.ErrNotFound)
		}
		cfg.Binary = bin
	}
	return &Containerd{cfg: cfg, restrict: restrict, ready: make(chan struct{})}, nil
}

// Config returns the configuration with the defaults applied.
func (c *Containerd) Config() Config { return c.cfg }

// Endpoint is the CRI endpoint, "unix://" + Socket.
func (c *Containerd) Endpoint() string { return c.cfg.Endpoint() }

// Ready is closed once containerd answers CRI Version and reports the
// runtime ready.
func (c *Containerd) Ready() <-chan struct{} { return c.ready }

// Version is containerd's "name version" as its CRI reported it, once Ready.
func (c *Containerd) Version() string {
	select {
	case <-c.ready:
		return c.version
	default:
		return ""
	}
}

// PID is the running containerd's process ID; 0 before it starts and
// after Run returned.
func (c *Containerd) PID() int { return int(c.pid.Load()) }

// LogPath is containerd's log file, Dir/containerd.log.
func (c *Containerd) LogPath() string { return filepath.Join(c.cfg.Dir, "containerd.log") }

// Run writes the configuration, starts containerd, waits (ReadyTimeout) for
// its CRI socket, and then supervises it until ctx ends: containerd exiting
// on its own is an error (with the tail of its log). When ctx ends, it
// sends SIGTERM by PID, SIGKILL after StopTimeout, waits for the exit and
// returns nil. It removes nothing: pods, images and state stay.
func (c *Containerd) Run(ctx context.Context) error {
	cfg := c.cfg
	log := cfg.Logger
	// A containerd still serving the socket (another berth on this data
	// dir) must not be replaced; a socket left by a killed one is removed,
	// or the readiness poll would talk to nothing.
	if c.answers(ctx) {
		return fmt.Errorf("containerd: a runtime already serves %s: %w", cfg.Endpoint(), errdefs.ErrAlreadyExists)
	}
	_ = os.Remove(cfg.Socket)
	if err := EnsureNetnsMount(); err != nil {
		return err
	}
	for _, d := range []string{cfg.Dir, cfg.Root, cfg.State, filepath.Dir(cfg.Socket), cfg.CNIConfDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
	}
	if err := WriteFiles(cfg, c.restrict); err != nil {
		return err
	}

	logFile, err := os.OpenFile(c.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	cmd := exec.Command(cfg.Binary, "--config", cfg.ConfigPath())
	cmd.Dir = cfg.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "PATH="+SearchPath())
	// Own process group, so a terminal's ^C reaches berth, which stops
	// containerd in order; SIGTERM if berth dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	err = cmd.Start()
	logFile.Close() // the child has its own copy
	if err != nil {
		return fmt.Errorf("containerd: start %s: %w", cfg.Binary, err)
	}
	pid := cmd.Process.Pid
	c.pid.Store(int64(pid))
	defer c.pid.Store(0)
	log.Info("containerd started", "pid", pid, "config", cfg.ConfigPath(), "log", c.LogPath(), "restrictOOMScoreAdj", c.restrict)
	// exited is closed once containerd has exited and been reaped; waitErr
	// is then its exit status.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	if err := c.waitReady(ctx, exited, &waitErr); err != nil {
		stopErr := c.stop(pid, cmd, exited)
		if tail := LogTail(c.LogPath(), 30); tail != "" {
			err = fmt.Errorf("%w\ncontainerd log (last lines):\n%s", err, tail)
		}
		return errors.Join(err, stopErr)
	}
	log.Info("containerd ready", "endpoint", cfg.Endpoint(), "version", c.version)

	select {
	case <-exited:
		msg := fmt.Sprintf("containerd (pid %d) exited unexpectedly: %v", pid, waitErr)
		if tail := LogTail(c.LogPath(), 30); tail != "" {
			msg += "\ncontainerd log (last lines):\n" + tail
		}
		return fmt.Errorf("%s: %w", msg, errdefs.ErrUnavailable)
	case <-ctx.Done():
	}
	return c.stop(pid, cmd, exited)
}

// waitReady polls the CRI socket until Version answers and Status reports
// the runtime ready, containerd exits, ReadyTimeout passes or ctx ends.
func (c *Containerd) waitReady(ctx context.Context, exited <-chan struct{}, waitErr *error) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ReadyTimeout)
	defer cancel()
	var last error
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if last = c.probe(ctx); last == nil {
			close(c.ready)
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("containerd: exited while starting: %v: %w", *waitErr, errdefs.ErrUnavailable)
		case <-ctx.Done():
			return fmt.Errorf("containerd: CRI not ready at %s within %s: %w (last: %v)", c.cfg.Endpoint(), c.cfg.ReadyTimeout, errdefs.ErrDeadlineExceeded, last)
		case <-tick.C:
		}
	}
}

// answers reports whether something speaks CRI on the socket already.
func (c *Containerd) answers(ctx context.Context) bool {
	if _, err := os.Stat(c.cfg.Socket); err != nil {
		return false
	}
	client, err := cri.New(ctx, cri.Config{Endpoint: c.cfg.Endpoint(), ConnectTimeout: time.Second})
	if err != nil {
		return false
	}
	client.Close()
	return true
}

func (c *Containerd) probe(ctx context.Context) error {
	if _, err := os.Stat(c.cfg.Socket); err != nil {
		return err
	}
	client, err := cri.New(ctx, cri.Config{Endpoint: c.cfg.Endpoint(), ConnectTimeout: 2 * time.Second, CallTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer client.Close()
	st, err := client.Status(ctx, false)
	if err != nil {
		return err
	}
	for _, cond := range st.GetStatus().GetConditions() {
		if cond.Type == runtimeapi.RuntimeReady && !cond.Status {
			return fmt.Errorf("runtime not ready: %s: %s", cond.Reason, cond.Message)
		}
	}
	v := client.RuntimeVersion()
	c.version = v.GetRuntimeName() + " " + v.GetRuntimeVersion()
	return nil
}

// stop sends SIGTERM to pid, SIGKILL after StopTimeout, and waits.
func (c *Containerd) stop(pid int, cmd *exec.Cmd, exited <-chan struct{}) error {
	log := c.cfg.Logger
	select {
	case <-exited:
		return nil // already gone (and reaped)
	default:
	}
	log.Info("stopping containerd", "pid", pid)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(c.cfg.StopTimeout)
	defer timer.Stop()
	select {
	case <-exited:
		log.Info("containerd stopped", "pid", pid)
		return nil
	case <-timer.C:
	}
	_ = cmd.Process.Kill()
	select {
	case <-exited:
		return fmt.Errorf("containerd (pid %d) ignored SIGTERM for %s and was killed", pid, c.cfg.StopTimeout)
	case <-time.After(c.cfg.StopTimeout):
		return fmt.Errorf("containerd (pid %d) did not exit after SIGKILL", pid)
	}
}

// SearchPath is PATH plus the sbin directories root's tools live in;
// containerd runs with it (runc, and iptables for the CNI plugins).
func SearchPath() string {
	path := os.Getenv("PATH")
	for _, d := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		if !strings.Contains(":"+path+":", ":"+d+":") {
			path += ":" + d
		}
	}
	return strings.TrimPrefix(path, ":")
}

// LookPath finds an executable on SearchPath.
func LookPath(bin string) (string, error) {
	for _, d := range filepath.SplitList(SearchPath()) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, bin)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// LogTail returns the last n lines of the file at path ("" if unreadable).
func LogTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
