package node

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Machine is one observation of the machine: its size and what is free.
type Machine struct {
	NumCPU int
	// MemoryTotal and MemoryAvailable are /proc/meminfo's MemTotal and
	// MemAvailable, in bytes.
	MemoryTotal, MemoryAvailable uint64
	// FsCapacity, FsAvailable (to unprivileged users), FsInodes and
	// FsInodesFree describe the root dir's filesystem (nodefs).
	FsCapacity, FsAvailable, FsInodes, FsInodesFree uint64
	// PIDMax is kernel.pid_max; Processes the number of tasks (threads)
	// running now.
	PIDMax, Processes uint64
}

// ReadMachine observes this machine: CPUs, /proc/meminfo, statfs of
// rootDir, kernel.pid_max and the task count from /proc/loadavg.
func ReadMachine(rootDir string) (Machine, error) {
	m := Machine{NumCPU: runtime.NumCPU()}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return m, fmt.Errorf("node: %w", err)
	}
	if m.MemoryTotal, m.MemoryAvailable, err = parseMeminfo(meminfo); err != nil {
		return m, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(rootDir, &st); err != nil {
		return m, fmt.Errorf("node: statfs %s: %w", rootDir, err)
	}
	bsize := uint64(st.Bsize)
	m.FsCapacity, m.FsAvailable = st.Blocks*bsize, st.Bavail*bsize
	m.FsInodes, m.FsInodesFree = st.Files, st.Ffree
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		m.PIDMax, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Processes = parseLoadavgTasks(b)
	}
	return m, nil
}

// parseMeminfo returns MemTotal and MemAvailable in bytes.
func parseMeminfo(b []byte) (total, available uint64, err error) {
	var haveTotal bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		n, perr := strconv.ParseUint(fields[0], 10, 64)
		if perr != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		switch key {
		case "MemTotal":
			total, haveTotal = n, true
		case "MemAvailable":
			available = n
		}
	}
	if !haveTotal {
		return 0, 0, fmt.Errorf("node: /proc/meminfo has no MemTotal")
	}
	return total, available, nil
}

// parseLoadavgTasks returns the total task count of /proc/loadavg's fourth
// field ("running/total").
func parseLoadavgTasks(b []byte) uint64 {
	fields := strings.Fields(string(b))
	if len(fields) < 4 {
		return 0
	}
	_, total, ok := strings.Cut(fields[3], "/")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseUint(total, 10, 64)
	return n
}

// parseOSRelease returns PRETTY_NAME of an os-release file ("Linux" if
// absent, as the kubelet's cadvisor reports).
func parseOSRelease(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && key == "PRETTY_NAME" {
			if unq, err := strconv.Unquote(value); err == nil {
				return unq
			}
			return strings.Trim(value, `"'`)
		}
	}
	return "Linux"
}

// validateNodeName returns why name is not a valid Node name ("" if it is).
func validateNodeName(name string) string {
	return strings.Join(validation.IsDNS1123Subdomain(name), "; ")
}
