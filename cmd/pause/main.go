// Command pause is the process that holds a pod sandbox's namespaces open.
// It runs as PID 1 of the sandbox: it blocks until SIGINT or SIGTERM and then
// exits 0, and it reaps every zombie reparented to it (SIGCHLD → wait4 loop)
// so processes orphaned in a shared PID namespace never pile up.
//
// Build it static: CGO_ENABLED=0 go build -o pause ./cmd/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	// Orphans reparented before SIGCHLD was wired up are reaped now.
	reap()
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every exited child without blocking. SIGCHLD coalesces, so
// one signal may stand for many exits: loop until none is left.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
