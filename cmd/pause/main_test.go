package main

import (
	"berth/internal/prereq"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// requireRoot: the tests run pause as PID 1 of a new PID namespace, which
// needs root. Under CI=true that is a failure, elsewhere a skip.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	prereq.Missing(t, "pause tests need root (a new PID namespace)")
}

// buildPause compiles this command statically, as the pause image does.
func buildPause(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pause")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startPause runs pause as PID 1 of a fresh PID namespace and returns once
// it has proved it reaps: an orphan is handed to it, killed, and collected.
func startPause(t *testing.T, bin string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pause: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	orphan := adoptOrphan(t, cmd.Process.Pid)
	if err := syscall.Kill(orphan, syscall.SIGKILL); err != nil {
		t.Fatalf("kill orphan %d: %v", orphan, err)
	}
	waitReaped(t, orphan, cmd.Process.Pid)
	return cmd
}

// adoptOrphan starts a sleep inside pause's PID namespace whose parent exits
// at once, so the kernel reparents it to the namespace's init: pause. It
// returns the orphan's PID as seen from here.
func adoptOrphan(t *testing.T, pausePID int) int {
	t.Helper()
	out, err := exec.Command("nsenter", "--target", strconv.Itoa(pausePID), "--pid", "--",
		"/bin/sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & exit 0").CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if kids := children(t, pausePID); len(kids) == 1 {
			return kids[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no orphan was reparented to pause (pid %d)", pausePID)
	return 0
}

// children lists the PIDs whose parent is ppid, zombies included.
func children(t *testing.T, ppid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, parent, ok := procStat(pid); ok && parent == ppid {
			kids = append(kids, pid)
		}
	}
	return kids
}

// procStat returns a process's state letter and parent PID.
func procStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces, so split after ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0], ppid, err == nil
}

// waitReaped polls until pid is no longer a child of pausePID — a zombie
// nobody waits for would stay forever.
func waitReaped(t *testing.T, pid, pausePID int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var state string
	for time.Now().Before(deadline) {
		st, parent, ok := procStat(pid)
		if !ok || parent != pausePID {
			return
		}
		state = st
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d (state %s) was never reaped by pause", pid, state)
}

func TestPauseReapsOrphansRepeatedly(t *testing.T) {
	requireRoot(t)
	cmd := startPause(t, buildPause(t))
	// Several orphans at once: SIGCHLDs coalesce, the wait4 loop must still
	// collect every one.
	var orphans []int
	for range 3 {
		out, err := exec.Command("nsenter", "--target", strconv.Itoa(cmd.Process.Pid), "--pid", "--",
			"/bin/sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & exit 0").CombinedOutput()
		if err != nil {
			t.Fatalf("nsenter: %v\n%s", err, out)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(orphans) < 3 && time.Now().Before(deadline) {
		orphans = children(t, cmd.Process.Pid)
		time.Sleep(10 * time.Millisecond)
	}
	if len(orphans) != 3 {
		t.Fatalf("pause has %d children, want 3 orphans", len(orphans))
	}
	for _, pid := range orphans {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	for _, pid := range orphans {
		waitReaped(t, pid, cmd.Process.Pid)
	}
	if st, _, ok := procStat(cmd.Process.Pid); !ok || st == "Z" {
		t.Fatalf("pause is not running after reaping (state %q)", st)
	}
}

func TestPauseExitsZeroOnTermination(t *testing.T) {
	requireRoot(t)
	bin := buildPause(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := startPause(t, bin)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				t.Fatalf("pause exited with %v after %v, want status 0", exitErr.ProcessState, sig)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
