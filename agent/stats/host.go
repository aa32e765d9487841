package stats

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Interface is one network interface's counters (/proc/<pid>/net/dev).
type Interface struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// ignoredInterface reports the devices cAdvisor leaves out of a network
// namespace's figures: loopback and the host ends of container links.
func ignoredInterface(name string) bool {
	return name == "lo" || strings.HasPrefix(name, "veth") || strings.HasPrefix(name, "docker") || strings.HasPrefix(name, "nerdctl")
}

// readNetDev parses a /proc/<pid>/net/dev file, without ignored devices.
func readNetDev(path string) ([]Interface, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Interface
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		name = strings.TrimSpace(name)
		if !ok || ignoredInterface(name) {
			continue // the two header lines, and ignored devices
		}
		fields := strings.Fields(rest)
		if len(fields) < 16 {
			continue
		}
		v := make([]uint64, 16)
		for i := range v {
			v[i], _ = strconv.ParseUint(fields[i], 10, 64)
		}
		// rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes packets errs drop ...
		out = append(out, Interface{
			Name: name, RxBytes: v[0], RxPackets: v[1], RxErrors: v[2], RxDropped: v[3],
			TxBytes: v[8], TxPackets: v[9], TxErrors: v[10], TxDropped: v[11],
		})
	}
	return out, sc.Err()
}

// FsUsage is a filesystem's or a directory's usage; Capacity, Available and
// Inodes/InodesFree describe the filesystem, Used/InodesUsed the directory.
type FsUsage struct {
	Device                         string
	Capacity, Available, Used      uint64
	Inodes, InodesFree, InodesUsed uint64
}

// statfs returns the size and free space of the filesystem holding path.
func statfs(path string) (FsUsage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return FsUsage{}, err
	}
	bs := uint64(st.Bsize)
	return FsUsage{
		Capacity: st.Blocks * bs, Available: st.Bavail * bs, Used: (st.Blocks - st.Bfree) * bs,
		Inodes: st.Files, InodesFree: st.Ffree, InodesUsed: st.Files - st.Ffree,
	}, nil
}

// diskUsage returns the bytes allocated to and the inodes used under dir,
// counting each hard-linked file once and staying on dir's filesystem.
func diskUsage(dir string) (bytes, inodes uint64, err error) {
	var root syscall.Stat_t
	if err := syscall.Lstat(dir, &root); err != nil {
		return 0, 0, err
	}
	seen := map[uint64]bool{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return nil
		}
		if st.Dev != root.Dev {
			return fs.SkipDir // another filesystem mounted inside
		}
		if st.Nlink > 1 {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		bytes += uint64(st.Blocks) * 512
		inodes++
		return nil
	})
	return bytes, inodes, err
}

// memInfo reads /proc/meminfo's fields in bytes.
func memInfo(path string) (map[string]uint64, error) {
	kv, err := readKeyValues(path)
	if err != nil {
		return nil, err
	}
	for k, v := range kv {
		kv[k] = v * 1024 // kB
	}
	return kv, nil
}

// hostProcesses returns the number of processes running on the host and
// the kernel's limit (pid_max), as the kubelet's rlimit stats.
func hostProcesses(procRoot string) (running, max uint64, err error) {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		return 0, 0, err
	}
	max, err = readUint(filepath.Join(procRoot, "sys", "kernel", "pid_max"))
	return uint64(info.Procs), max, err
}
