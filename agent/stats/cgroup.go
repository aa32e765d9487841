package stats

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CgroupStats is one cgroup's CPU, memory and process usage, read from
// either cgroup version. Fields a hierarchy lacks stay zero.
type CgroupStats struct {
	// CPUUsage, CPUUser and CPUSystem are cumulative core-nanoseconds.
	CPUUsage, CPUUser, CPUSystem uint64

	// Memory, in bytes. WorkingSet is usage less inactive file pages, as
	// cAdvisor computes it; Limit is 0 when unlimited.
	MemoryUsage, MemoryMaxUsage, WorkingSet, RSS, Cache, MappedFile, Swap uint64
	ActiveFile, InactiveFile, Limit                                       uint64
	Failcnt, PageFaults, MajorPageFaults                                  uint64

	// Processes is the number of tasks in the cgroup (pids.current);
	// ProcessesMax its pids.max (0: unlimited).
	Processes, ProcessesMax uint64
}

// unlimited is above any real limit: v1 reports "no limit" as a huge page-aligned
// number (PAGE_COUNTER_MAX × page size).
const unlimited = uint64(1) << 62

// Cgroups reads cgroups by their path relative to the hierarchy root (e.g.
// /kubepods/burstable/pod<uid>/<container-id>), on a v1 layout (one
// directory per controller under Root) or a v2 unified one.
type Cgroups struct {
	// Root is where the hierarchies are mounted (normally /sys/fs/cgroup).
	Root string
	// V2 reports a unified (cgroup v2) hierarchy at Root.
	V2 bool
}

// DetectCgroups inspects root: a cgroup.controllers file at it means v2.
func DetectCgroups(root string) Cgroups {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return Cgroups{Root: root, V2: err == nil}
}

// Exists reports whether the cgroup at path exists (in the memory
// controller on v1).
func (c Cgroups) Exists(path string) bool {
	dir := filepath.Join(c.Root, path)
	if !c.V2 {
		dir = filepath.Join(c.Root, "memory", path)
	}
	_, err := os.Stat(dir)
	return err == nil
}

// Procs returns the process IDs in the cgroup at path (not its children).
func (c Cgroups) Procs(path string) ([]int, error) {
	dir := filepath.Join(c.Root, path)
	if !c.V2 {
		dir = filepath.Join(c.Root, "pids", path)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Read returns the usage of the cgroup at path; an error wrapping
// fs.ErrNotExist when the cgroup is gone.
func (c Cgroups) Read(path string) (CgroupStats, error) {
	if c.V2 {
		return readV2(filepath.Join(c.Root, path))
	}
	return readV1(c.Root, path)
}

func readV1(root, path string) (CgroupStats, error) {
	var s CgroupStats
	cpu := filepath.Join(root, "cpuacct", path)
	if _, err := os.Stat(cpu); errors.Is(err, fs.ErrNotExist) {
		// cpu and cpuacct may be mounted together.
		cpu = filepath.Join(root, "cpu,cpuacct", path)
	}
	var err error
	if s.CPUUsage, err = readUint(filepath.Join(cpu, "cpuacct.usage")); err != nil {
		return s, err
	}
	// cpuacct.stat counts USER_HZ ticks (100 per second on Linux).
	if kv, err := readKeyValues(filepath.Join(cpu, "cpuacct.stat")); err == nil {
		s.CPUUser, s.CPUSystem = kv["user"]*1e7, kv["system"]*1e7
	}

	mem := filepath.Join(root, "memory", path)
	if s.MemoryUsage, err = readUint(filepath.Join(mem, "memory.usage_in_bytes")); err != nil {
		return s, err
	}
	s.MemoryMaxUsage, _ = readUint(filepath.Join(mem, "memory.max_usage_in_bytes"))
	s.Failcnt, _ = readUint(filepath.Join(mem, "memory.failcnt"))
	if s.Limit, _ = readUint(filepath.Join(mem, "memory.limit_in_bytes")); s.Limit >= unlimited {
		s.Limit = 0
	}
	kv, err := readKeyValues(filepath.Join(mem, "memory.stat"))
	if err != nil {
		return s, err
	}
	s.RSS, s.Cache, s.MappedFile, s.Swap = kv["total_rss"], kv["total_cache"], kv["total_mapped_file"], kv["total_swap"]
	s.ActiveFile, s.InactiveFile = kv["total_active_file"], kv["total_inactive_file"]
	s.PageFaults, s.MajorPageFaults = kv["total_pgfault"], kv["total_pgmajfault"]
	s.WorkingSet = sub(s.MemoryUsage, s.InactiveFile)

	// The root of the pids hierarchy has no pids.current.
	pids := filepath.Join(root, "pids", path)
	s.Processes, _ = readUint(filepath.Join(pids, "pids.current"))
	s.ProcessesMax, _ = readUint(filepath.Join(pids, "pids.max"))
	return s, nil
}

func readV2(dir string) (CgroupStats, error) {
	var s CgroupStats
	kv, err := readKeyValues(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return s, err
	}
	s.CPUUsage, s.CPUUser, s.CPUSystem = kv["usage_usec"]*1000, kv["user_usec"]*1000, kv["system_usec"]*1000

	// The root has no memory.stat on older kernels; callers fill the
	// node's memory in from /proc/meminfo.
	mem, _ := readKeyValues(filepath.Join(dir, "memory.stat"))
	s.RSS, s.Cache, s.MappedFile = mem["anon"], mem["file"], mem["file_mapped"]
	s.ActiveFile, s.InactiveFile = mem["active_file"], mem["inactive_file"]
	s.PageFaults, s.MajorPageFaults = mem["pgfault"], mem["pgmajfault"]
	// The root cgroup has no memory.current: its usage is what the
	// statistics account for.
	if s.MemoryUsage, err = readUint(filepath.Join(dir, "memory.current")); err != nil {
		s.MemoryUsage = mem["anon"] + mem["file"] + mem["kernel"]
	}
	s.MemoryMaxUsage, _ = readUint(filepath.Join(dir, "memory.peak"))
	s.Swap, _ = readUint(filepath.Join(dir, "memory.swap.current"))
	s.Limit, _ = readUint(filepath.Join(dir, "memory.max")) // "max" reads as 0
	if events, err := readKeyValues(filepath.Join(dir, "memory.events")); err == nil {
		s.Failcnt = events["max"]
	}
	s.WorkingSet = sub(s.MemoryUsage, s.InactiveFile)
	s.Processes, _ = readUint(filepath.Join(dir, "pids.current"))
	s.ProcessesMax, _ = readUint(filepath.Join(dir, "pids.max"))
	return s, nil
}

// sub is a-b, floored at 0.
func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v := string(bytes.TrimSpace(b))
	if v == "max" {
		return 0, nil
	}
	return strconv.ParseUint(v, 10, 64)
}

// readKeyValues reads "key value" lines (memory.stat, cpu.stat, /proc/meminfo
// without its units); unparsable values are left out.
func readKeyValues(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if v, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
			out[strings.TrimSuffix(fields[0], ":")] = v
		}
	}
	return out, sc.Err()
}
