package nodeenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"berth/internal/mountinfo"
)

// processMentions reports whether pid is alive and its command line contains
// s — how a recorded PID is told apart from a recycled one.
func processMentions(pid int, s string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s)
}

// waitGone polls until pid has exited (and been reaped) or 10 s pass.
func waitGone(pid int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if st, _ := procState(pid); st == "Z" {
			return true // a zombie of someone else's: it has exited
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// procState returns a process's state letter and parent PID.
func procState(pid int) (string, int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return "", 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return f[0], ppid
}

// processes maps every PID to its parent.
func processes() map[int]int {
	out := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid := procState(pid); ppid >= 0 {
			out[pid] = ppid
		}
	}
	return out
}

// shimPIDs finds the containerd shims serving the containerd at socket: their
// command line names it with -address.
func shimPIDs(socket string) []int {
	var pids []int
	for pid := range processes() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-address" && args[i+1] == socket {
				pids = append(pids, pid)
			}
		}
	}
	sort.Ints(pids)
	return pids
}

// killShims SIGKILLs, by PID, every shim of the containerd at socket and
// every process below them (pause and container processes), children first.
// It is the fallback when CRI removal could not end them.
func killShims(socket string) error {
	shims := shimPIDs(socket)
	if len(shims) == 0 {
		return nil
	}
	parents := processes()
	var victims []int
	var walk func(pid int)
	walk = func(pid int) {
		for child, ppid := range parents {
			if ppid == pid {
				walk(child)
			}
		}
		victims = append(victims, pid)
	}
	for _, s := range shims {
		walk(s)
	}
	for _, pid := range victims {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	var stuck []string
	for _, pid := range victims {
		if !waitGone(pid) {
			stuck = append(stuck, strconv.Itoa(pid))
		}
	}
	if len(stuck) > 0 {
		return fmt.Errorf("processes of %s did not exit after SIGKILL: %s", socket, strings.Join(stuck, ", "))
	}
	return nil
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		return nil, err
	}
	var points []string
	for _, m := range mountinfo.Under(mounts, dir) {
		points = append(points, m.MountPoint)
	}
	return points, nil
}

// removeNetns unmounts and deletes a network namespace file (e.g.
// /var/run/netns/cni-…) if it still exists.
func removeNetns(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := mountinfo.UnmountAll(path); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	return nil
}

// deleteLink removes the network interface name if it exists.
func deleteLink(name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("look up link %s: %w", name, err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("delete link %s: %w", name, err)
	}
	return nil
}
