package nodeenv

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"time"
)

// KillContainerd SIGKILLs the environment's containerd, as a crash would:
// its shims and containers keep running. RestartContainerd brings it back.
func (e *Env) KillContainerd() error {
	if !e.running() {
		return fmt.Errorf("nodeenv: containerd is not running")
	}
	if err := e.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("nodeenv: kill containerd: %w", err)
	}
	select {
	case <-e.exited:
		return nil
	case <-time.After(15 * time.Second):
		return fmt.Errorf("nodeenv: containerd (pid %d) did not exit after SIGKILL", e.cmd.Process.Pid)
	}
}

// RestartContainerd starts containerd again on the environment's config and
// state (after KillContainerd) and waits until its CRI answers and reports
// the runtime ready.
func (e *Env) RestartContainerd(ctx context.Context) error {
	if e.running() {
		return fmt.Errorf("nodeenv: containerd is still running")
	}
	if e.conn != nil {
		_ = e.conn.Close()
	}
	if err := e.launchRecorded(filepath.Join(e.Dir, "config.toml")); err != nil {
		return fmt.Errorf("nodeenv: restart containerd: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := e.waitReady(ctx, false); err != nil {
		return fmt.Errorf("nodeenv: restart containerd: %w", err)
	}
	return nil
}
