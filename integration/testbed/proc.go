package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/vishvananda/netns"

	"berth/internal/containerd"
)

// Proc is a process of the test bed: a server, a containerd, an agent.
type Proc struct {
	Name string
	// LogPath holds its stdout and stderr.
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

// start runs bin args in the network namespace at nsPath ("": the
// test's own), logging to logPath. The process is killed if the test
// binary dies.
func start(name, nsPath, logPath, bin string, args ...string) (*Proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "PATH="+containerd.SearchPath())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Proc{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	// The starting thread also waits: the child's parent-death signal
	// fires when the thread that started it ends.
	started := make(chan error, 1)
	go func() {
		err := inNetns(nsPath, func() error {
			if err := cmd.Start(); err != nil {
				return err
			}
			started <- nil
			_ = cmd.Wait()
			return nil
		})
		if err != nil {
			started <- err
			return
		}
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("testbed: start %s: %w", name, err)
	}
	return p, nil
}

// inNetns runs f on a thread locked to this goroutine, in the network
// namespace at path ("": this thread's own); a thread moved to another
// namespace is discarded after (never returned to the scheduler's pool).
// A process f starts inherits the namespace.
func inNetns(path string, f func() error) error {
	runtime.LockOSThread()
	if path == "" {
		defer runtime.UnlockOSThread()
		return f()
	}
	// Never unlocked: the thread exits with the calling goroutine.
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return err
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		return err
	}
	return f()
}

// Pid is the process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill kills the process at once (SIGKILL) and waits for it.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Stop sends SIGTERM, SIGKILL after timeout, and waits.
func (p *Proc) Stop(timeout time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.Kill()
	}
}

// Tail is the last n bytes of the process's log.
func (p *Proc) Tail(n int) string {
	b, _ := os.ReadFile(p.LogPath)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
