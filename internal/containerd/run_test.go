package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"berth/cri"
	"berth/internal/errdefs"
	"berth/internal/prereq"
)

// TestRunStartsAndStopsContainerd runs a real containerd under Run: the
// CRI answers once Ready is closed, and ending the context stops the
// process (by PID) with Run returning nil.
func TestRunStartsAndStopsContainerd(t *testing.T) {
	requireBinary(t, "containerd")
	if os.Geteuid() != 0 {
		prereq.Missing(t, "containerd needs root")
	}
	cfg := validConfig(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case <-c.Ready():
	case err := <-done:
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatal("containerd not ready in 90s")
	}
	if !strings.HasPrefix(c.Version(), "containerd ") {
		t.Errorf("Version() = %q", c.Version())
	}
	client, err := cri.New(ctx, cri.Config{Endpoint: c.Endpoint()})
	if err != nil {
		t.Fatalf("CRI at %s: %v", c.Endpoint(), err)
	}
	client.Close()
	// A second instance on the same socket refuses to start.
	second, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Run(ctx); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Errorf("a second containerd on the same socket: Run = %v, want ErrAlreadyExists", err)
	}
	pids := processesMentioning(c.Config().ConfigPath())
	if len(pids) != 1 || pids[0] != fmt.Sprint(c.PID()) {
		t.Fatalf("processes running with our config: %v, want one: PID() = %d", pids, c.PID())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if c.PID() != 0 {
		t.Errorf("PID() = %d after Run returned", c.PID())
	}
	if left := processesMentioning(c.Config().ConfigPath()); len(left) != 0 {
		t.Errorf("containerd still running after Run returned: %v", left)
	}
}

func TestRunReportsAContainerdThatCannotStart(t *testing.T) {
	cfg := validConfig(t)
	cfg.Binary = "/bin/false"
	cfg.ReadyTimeout = 20 * time.Second
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Run(context.Background())
	if !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("Run with a binary that exits = %v, want ErrUnavailable", err)
	}
}

// processesMentioning lists the PIDs whose command line contains s.
func processesMentioning(s string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
