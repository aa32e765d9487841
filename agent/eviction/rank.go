package eviction

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"berth/agent/node"
)

// Observe reads the signals from a Summary, as upstream: memory available
// is the node's (capacity less working set), pid available is pid_max less
// the running processes.
func Observe(s *statsapi.Summary) map[node.Signal]Observation {
	out := map[node.Signal]Observation{}
	n := s.Node
	if m := n.Memory; m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
		out[node.SignalMemoryAvailable] = Observation{Available: *m.AvailableBytes, Capacity: *m.AvailableBytes + *m.WorkingSetBytes}
	}
	fs := func(f *statsapi.FsStats, bytes, inodes node.Signal) {
		if f == nil {
			return
		}
		if f.AvailableBytes != nil && f.CapacityBytes != nil {
			out[bytes] = Observation{Available: *f.AvailableBytes, Capacity: *f.CapacityBytes}
		}
		if f.InodesFree != nil && f.Inodes != nil {
			out[inodes] = Observation{Available: *f.InodesFree, Capacity: *f.Inodes}
		}
	}
	fs(n.Fs, node.SignalNodeFsAvailable, node.SignalNodeFsInodesFree)
	if n.Runtime != nil {
		fs(n.Runtime.ImageFs, node.SignalImageFsAvailable, node.SignalImageFsInodesFree)
	}
	if r := n.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil && *r.MaxPID >= *r.NumOfRunningProcesses {
		out[node.SignalPIDAvailable] = Observation{Available: uint64(*r.MaxPID - *r.NumOfRunningProcesses), Capacity: uint64(*r.MaxPID)}
	}
	return out
}

// Candidate is a pod with its usage (nil Stats: none was found, which
// ranks it first, as upstream).
type Candidate struct {
	Pod   *v1.Pod
	Stats *statsapi.PodStats
}

// resourceInodes is what inode usage is compared with: nothing requests it.
const resourceInodes v1.ResourceName = "inodes"

// cmp orders two candidates: negative when a is evicted first.
type cmp func(a, b Candidate) int

// Rank orders candidates for eviction under pressure on signal, as the
// kubelet ranks them:
//
//	memory:          usage over requests first, then lower priority, then usage above requests (most first)
//	nodefs, imagefs: ephemeral storage over requests first, then lower priority, then usage above requests
//	inodes:          inodes used at all first (nothing requests inodes), then lower priority, then
//	                 inodes used less the ephemeral-storage request (upstream's arithmetic)
//	pid:             lower priority, then process count (most first)
//
// Disk usage is the pod's ephemeral storage (rootfs, logs, local volumes)
// whichever filesystem is short: berth's image and node filesystems are
// usually one.
func Rank(signal node.Signal, candidates []Candidate) {
	var order []cmp
	switch signal {
	case node.SignalMemoryAvailable:
		order = []cmp{exceeds(memoryUsage, v1.ResourceMemory), byPriority, aboveRequest(memoryUsage, v1.ResourceMemory)}
	case node.SignalNodeFsAvailable, node.SignalImageFsAvailable:
		order = []cmp{exceeds(diskUsage, v1.ResourceEphemeralStorage), byPriority, aboveRequest(diskUsage, v1.ResourceEphemeralStorage)}
	case node.SignalNodeFsInodesFree, node.SignalImageFsInodesFree:
		order = []cmp{exceeds(inodeUsage, resourceInodes), byPriority, aboveRequest(inodeUsage, v1.ResourceEphemeralStorage)}
	case node.SignalPIDAvailable:
		order = []cmp{byPriority, most(processUsage)}
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		for _, c := range order {
			if r := c(candidates[i], candidates[j]); r != 0 {
				return r < 0
			}
		}
		return false
	})
}

// noStatsFirst orders candidates without stats first; ok is false when
// either has none.
func noStatsFirst(a, b Candidate) (int, bool) {
	if a.Stats == nil || b.Stats == nil {
		return cmpBool(a.Stats == nil, b.Stats == nil), false
	}
	return 0, true
}

// cmpBool puts true first.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

func byPriority(a, b Candidate) int {
	pa, pb := priority(a.Pod), priority(b.Pod)
	switch {
	case pa < pb:
		return -1
	case pa > pb:
		return 1
	}
	return 0
}

// request is the pod's request of r, as upstream's resource helpers count
// it: the sum of its containers' or the largest init container's, plus
// overhead.
func request(p *v1.Pod, r v1.ResourceName) int64 {
	var sum int64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[r]; ok {
			sum += q.Value()
		}
	}
	for _, c := range p.Spec.InitContainers {
		if q, ok := c.Resources.Requests[r]; ok && q.Value() > sum {
			sum = q.Value()
		}
	}
	if q, ok := p.Spec.Overhead[r]; ok {
		sum += q.Value()
	}
	return sum
}

func exceeds(usage func(*statsapi.PodStats) int64, r v1.ResourceName) cmp {
	return func(a, b Candidate) int {
		if c, ok := noStatsFirst(a, b); !ok {
			return c
		}
		return cmpBool(usage(a.Stats) > request(a.Pod, r), usage(b.Stats) > request(b.Pod, r))
	}
}

func aboveRequest(usage func(*statsapi.PodStats) int64, r v1.ResourceName) cmp {
	return func(a, b Candidate) int {
		if c, ok := noStatsFirst(a, b); !ok {
			return c
		}
		da, db := usage(a.Stats)-request(a.Pod, r), usage(b.Stats)-request(b.Pod, r)
		switch {
		case da > db:
			return -1
		case da < db:
			return 1
		}
		return 0
	}
}

func most(usage func(*statsapi.PodStats) int64) cmp {
	return func(a, b Candidate) int {
		if c, ok := noStatsFirst(a, b); !ok {
			return c
		}
		ua, ub := usage(a.Stats), usage(b.Stats)
		switch {
		case ua > ub:
			return -1
		case ua < ub:
			return 1
		}
		return 0
	}
}

func u64(p *uint64) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

func memoryUsage(s *statsapi.PodStats) int64 {
	if s.Memory == nil {
		return 0
	}
	return u64(s.Memory.WorkingSetBytes)
}

func diskUsage(s *statsapi.PodStats) int64 {
	if s.EphemeralStorage == nil {
		return 0
	}
	return u64(s.EphemeralStorage.UsedBytes)
}

func inodeUsage(s *statsapi.PodStats) int64 {
	if s.EphemeralStorage == nil {
		return 0
	}
	return u64(s.EphemeralStorage.InodesUsed)
}

func processUsage(s *statsapi.PodStats) int64 {
	if s.ProcessStats == nil {
		return 0
	}
	return u64(s.ProcessStats.ProcessCount)
}
