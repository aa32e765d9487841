package stats

import (
	"os"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// memoryStats converts a cgroup's memory figures; AvailableBytes is the
// limit less the working set, when there is a limit (as upstream).
func memoryStats(t metav1.Time, cg CgroupStats) *statsapi.MemoryStats {
	m := &statsapi.MemoryStats{
		Time: t, UsageBytes: ptr(cg.MemoryUsage), WorkingSetBytes: ptr(cg.WorkingSet), RSSBytes: ptr(cg.RSS),
		PageFaults: ptr(cg.PageFaults), MajorPageFaults: ptr(cg.MajorPageFaults),
	}
	if cg.Limit > 0 {
		m.AvailableBytes = ptr(sub(cg.Limit, cg.WorkingSet))
	}
	return m
}

// networkStats converts a namespace's interfaces; the top-level figures are
// the first interface's (the pod's eth0), as upstream reports the default
// interface.
func networkStats(t metav1.Time, ifaces []Interface) *statsapi.NetworkStats {
	n := &statsapi.NetworkStats{Time: t}
	for i, in := range ifaces {
		s := statsapi.InterfaceStats{Name: in.Name, RxBytes: ptr(in.RxBytes), RxErrors: ptr(in.RxErrors), TxBytes: ptr(in.TxBytes), TxErrors: ptr(in.TxErrors)}
		if i == 0 || in.Name == "eth0" {
			n.InterfaceStats = s
		}
		n.Interfaces = append(n.Interfaces, s)
	}
	return n
}

// fsStats converts a filesystem's statfs figures.
func fsStats(t metav1.Time, fs FsUsage) *statsapi.FsStats {
	return &statsapi.FsStats{
		Time: t, CapacityBytes: ptr(fs.Capacity), AvailableBytes: ptr(fs.Available), UsedBytes: ptr(fs.Used),
		Inodes: ptr(fs.Inodes), InodesFree: ptr(fs.InodesFree), InodesUsed: ptr(fs.InodesUsed),
	}
}

// sumContainers adds up the containers' CPU and memory, for a pod whose
// own cgroup cannot be read.
func sumContainers(t metav1.Time, cs []statsapi.ContainerStats) (*statsapi.CPUStats, *statsapi.MemoryStats) {
	var cpu, rate, ws, usage uint64
	rated := false
	for _, c := range cs {
		if c.CPU != nil {
			cpu += deref(c.CPU.UsageCoreNanoSeconds)
			if c.CPU.UsageNanoCores != nil {
				rate += *c.CPU.UsageNanoCores
				rated = true
			}
		}
		if c.Memory != nil {
			ws += deref(c.Memory.WorkingSetBytes)
			usage += deref(c.Memory.UsageBytes)
		}
	}
	out := &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: ptr(cpu)}
	if rated {
		out.UsageNanoCores = ptr(rate)
	}
	return out, &statsapi.MemoryStats{Time: t, WorkingSetBytes: ptr(ws), UsageBytes: ptr(usage)}
}

// deviceOf is the device a file is on.
func deviceOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Dev
	}
	return 0
}

// CPUAndMemory returns a copy of s with only the CPU and memory figures, as
// /stats/summary?only_cpu_and_memory=true answers.
func CPUAndMemory(s statsapi.Summary) statsapi.Summary {
	out := statsapi.Summary{Node: statsapi.NodeStats{
		NodeName: s.Node.NodeName, StartTime: s.Node.StartTime, CPU: s.Node.CPU, Memory: s.Node.Memory, Swap: s.Node.Swap,
	}, Pods: make([]statsapi.PodStats, 0, len(s.Pods))}
	for _, p := range s.Pods {
		q := statsapi.PodStats{PodRef: p.PodRef, StartTime: p.StartTime, CPU: p.CPU, Memory: p.Memory, Swap: p.Swap, Containers: make([]statsapi.ContainerStats, 0, len(p.Containers))}
		for _, c := range p.Containers {
			q.Containers = append(q.Containers, statsapi.ContainerStats{Name: c.Name, StartTime: c.StartTime, CPU: c.CPU, Memory: c.Memory, Swap: c.Swap})
		}
		out.Pods = append(out.Pods, q)
	}
	return out
}
