package stats

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"berth/agent/cgroups"
	"berth/agent/volumes"
	"berth/cri"
	"berth/internal/mountinfo"
)

// Snapshot is one sample: the kubelet Summary, and the per-cgroup figures
// behind it in cAdvisor's shape (the node's root cgroup, each pod's and
// each container's), for /metrics/cadvisor.
type Snapshot struct {
	Time    time.Time
	Summary statsapi.Summary
	Cgroups []CgroupSample
}

// CgroupSample is one cgroup's usage with cAdvisor's identity of it: ID is
// the cgroup path, Name the runtime's container ID (empty for pods and the
// node), Image the container's image; Container, Pod and Namespace name the
// Kubernetes objects (empty where they do not apply).
type CgroupSample struct {
	ID, Name, Image           string
	Container, Pod, Namespace string
	StartTime                 time.Time
	Stats                     CgroupStats
	// Network is the interfaces of the cgroup's network namespace (pods and
	// the node only).
	Network []Interface
	// Fs is the container's writable layer (containers only).
	Fs *FsUsage
}

// volumeTTL is how long a volume's disk-usage walk is reused, the kubelet's
// volume stats aggregation period.
const volumeTTL = time.Minute

type cachedUsage struct {
	at            time.Time
	bytes, inodes uint64
}

// sample takes one sample of the node and its running pods.
func (p *Provider) sample(ctx context.Context) (*Snapshot, error) {
	now := p.cfg.Now()
	rt := p.cfg.Runtime
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	containers, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	criStats := map[string]*runtimeapi.ContainerStats{}
	if list, err := rt.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{}); err != nil {
		p.cfg.Logger.Debug("the runtime gives no container stats; reading cgroups only", "err", err)
	} else {
		for _, s := range list {
			criStats[s.GetAttributes().GetId()] = s
		}
	}
	imageFs, imageDevice := p.imageFs(ctx, now)

	next := map[string]cpuSample{}
	snap := &Snapshot{Time: now}
	var errs []error
	vols := map[string]cachedUsage{}
	// Measured once a sample: the node's filesystem (pods' ephemeral
	// storage) and the log directory's.
	p.nodeFs, p.logFs = nil, nil
	if fs, err := statfs(p.cfg.RootDir); err == nil {
		p.nodeFs = &fs
	}
	if fs, err := statfs(p.cfg.PodLogDir); err == nil {
		p.logFs = &fs
	}
	node, nodeSample, err := p.nodeStats(now, next)
	if err != nil {
		errs = append(errs, err)
	}
	node.Runtime = &statsapi.RuntimeStats{ImageFs: imageFs, ContainerFs: imageFs}
	snap.Summary.Node = node
	snap.Cgroups = append(snap.Cgroups, nodeSample)

	claimVolumes := p.claimVolumes(now)
	byPod := map[string][]*runtimeapi.Container{}
	for _, c := range containers {
		byPod[c.GetPodSandboxId()] = append(byPod[c.GetPodSandboxId()], c)
	}
	snap.Summary.Pods = []statsapi.PodStats{}
	for _, sb := range sandboxes {
		pod, samples, err := p.podStats(sb, byPod[sb.GetId()], criStats, imageFs, imageDevice, now, next, vols)
		if errors.Is(err, errSkip) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pod.VolumeStats = append(pod.VolumeStats, claimVolumes[types.UID(pod.PodRef.UID)]...)
		snap.Summary.Pods = append(snap.Summary.Pods, pod)
		snap.Cgroups = append(snap.Cgroups, samples...)
	}
	sort.Slice(snap.Summary.Pods, func(i, j int) bool {
		a, b := snap.Summary.Pods[i].PodRef, snap.Summary.Pods[j].PodRef
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	p.prevCPU, p.volCache = next, vols
	return snap, errors.Join(errs...)
}

// nodeStats samples the node: its root cgroup, memory capacity, network,
// root filesystem and process counts.
func (p *Provider) nodeStats(now time.Time, next map[string]cpuSample) (statsapi.NodeStats, CgroupSample, error) {
	t := metav1.NewTime(now)
	node := statsapi.NodeStats{NodeName: p.cfg.NodeName, StartTime: metav1.NewTime(p.startTime)}
	sample := CgroupSample{ID: "/", StartTime: p.startTime}
	cg, err := p.cfg.Cgroups.Read("/")
	if err != nil {
		return node, sample, fmt.Errorf("stats: the node's cgroup: %w", err)
	}
	if mem, err := memInfo(filepath.Join(p.cfg.ProcRoot, "meminfo")); err == nil {
		if p.cfg.Cgroups.V2 {
			// The v2 root has no memory.current: take the kernel's figures.
			cg.MemoryUsage = sub(mem["MemTotal"], mem["MemFree"])
			cg.InactiveFile = mem["Inactive(file)"]
			cg.WorkingSet = sub(cg.MemoryUsage, cg.InactiveFile)
		}
		cg.Limit = mem["MemTotal"]
	}
	sample.Stats = cg
	node.CPU = &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: ptr(cg.CPUUsage), UsageNanoCores: p.rate(next, "node", cg.CPUUsage, now)}
	node.Memory = memoryStats(t, cg)
	if ifaces, err := readNetDev(filepath.Join(p.cfg.ProcRoot, "self", "net", "dev")); err == nil {
		sample.Network = ifaces
		node.Network = networkStats(t, ifaces)
	}
	if p.nodeFs != nil {
		node.Fs = fsStats(t, *p.nodeFs)
	}
	if running, max, err := hostProcesses(p.cfg.ProcRoot); err == nil {
		node.Rlimit = &statsapi.RlimitStats{Time: t, NumOfRunningProcesses: ptr(int64(running)), MaxPID: ptr(int64(max))}
	}
	if cg.Swap > 0 {
		node.Swap = &statsapi.SwapStats{Time: t, SwapUsageBytes: ptr(cg.Swap)}
	}
	return node, sample, nil
}

// imageFs is the runtime's image filesystem (CRI ImageFsInfo), with its
// size from statfs, and the device it is on; nil when the runtime does not
// say.
func (p *Provider) imageFs(ctx context.Context, now time.Time) (*statsapi.FsStats, string) {
	resp, err := p.cfg.Runtime.ImageFsInfo(ctx)
	if err != nil || len(resp.GetImageFilesystems()) == 0 {
		if err != nil {
			p.cfg.Logger.Debug("ImageFsInfo failed", "err", err)
		}
		return nil, ""
	}
	usage := resp.GetImageFilesystems()[0]
	out := &statsapi.FsStats{Time: metav1.NewTime(now)}
	device := ""
	if mp := usage.GetFsId().GetMountpoint(); mp != "" {
		if fs, err := statfs(mp); err == nil {
			out = fsStats(out.Time, fs)
		}
		if mounts, err := mountinfo.Read(p.cfg.MountInfo); err == nil {
			if m := mountinfo.Containing(mounts, mp); m != nil {
				device = m.Source
			}
		}
	}
	if u := usage.GetUsedBytes(); u != nil {
		out.UsedBytes = ptr(u.GetValue())
	}
	if u := usage.GetInodesUsed(); u != nil {
		out.InodesUsed = ptr(u.GetValue())
	}
	return out, device
}

// podStats samples one pod: its cgroup, its containers and its volumes.
func (p *Provider) podStats(sb *runtimeapi.PodSandbox, containers []*runtimeapi.Container, criStats map[string]*runtimeapi.ContainerStats,
	imageFs *statsapi.FsStats, imageDevice string, now time.Time, next map[string]cpuSample, vols map[string]cachedUsage) (statsapi.PodStats, []CgroupSample, error) {
	t := metav1.NewTime(now)
	md := sb.GetMetadata()
	uid := types.UID(md.GetUid())
	pod := statsapi.PodStats{
		PodRef:     statsapi.PodReference{Name: md.GetName(), Namespace: md.GetNamespace(), UID: string(uid)},
		StartTime:  metav1.NewTime(time.Unix(0, sb.GetCreatedAt())),
		Containers: []statsapi.ContainerStats{},
	}
	podCgroup := ""
	for _, dir := range cgroups.PodDirs(p.cfg.CgroupRoot, uid) {
		if p.cfg.Cgroups.Exists(dir) {
			podCgroup = dir
			break
		}
	}
	var samples []CgroupSample
	podSample := CgroupSample{ID: podCgroup, Pod: md.GetName(), Namespace: md.GetNamespace(), StartTime: pod.StartTime.Time}
	if podCgroup != "" {
		cg, err := p.readCgroup(podCgroup)
		if err != nil {
			return pod, nil, err
		}
		podSample.Stats = cg
		pod.CPU = &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: ptr(cg.CPUUsage), UsageNanoCores: p.rate(next, "pod/"+string(uid), cg.CPUUsage, now)}
		pod.Memory = memoryStats(t, cg)
		pod.ProcessStats = &statsapi.ProcessStats{ProcessCount: ptr(cg.Processes)}
		if cg.Swap > 0 {
			pod.Swap = &statsapi.SwapStats{Time: t, SwapUsageBytes: ptr(cg.Swap)}
		}
		// The sandbox's processes are in the pod's network namespace.
		if pids, err := p.cfg.Cgroups.Procs(path.Join(podCgroup, sb.GetId())); err == nil && len(pids) > 0 {
			if ifaces, err := readNetDev(filepath.Join(p.cfg.ProcRoot, fmt.Sprint(pids[0]), "net", "dev")); err == nil {
				podSample.Network = ifaces
				pod.Network = networkStats(t, ifaces)
			}
		}
	}
	samples = append(samples, podSample)

	logDir := filepath.Join(p.cfg.PodLogDir, md.GetNamespace()+"_"+md.GetName()+"_"+string(uid))
	var ephemeral FsUsage
	for _, c := range containers {
		cs, sample, err := p.containerStats(c, podCgroup, criStats[c.GetId()], imageFs, imageDevice, logDir, now, next)
		if errors.Is(err, errSkip) {
			continue
		}
		if err != nil {
			return pod, nil, err
		}
		sample.Pod, sample.Namespace = md.GetName(), md.GetNamespace()
		if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil {
			ephemeral.Used += *cs.Rootfs.UsedBytes
			ephemeral.InodesUsed += deref(cs.Rootfs.InodesUsed)
		}
		if cs.Logs != nil && cs.Logs.UsedBytes != nil {
			ephemeral.Used += *cs.Logs.UsedBytes
			ephemeral.InodesUsed += deref(cs.Logs.InodesUsed)
		}
		pod.Containers = append(pod.Containers, cs)
		samples = append(samples, sample)
	}
	sort.Slice(pod.Containers, func(i, j int) bool { return pod.Containers[i].Name < pod.Containers[j].Name })
	if pod.CPU == nil {
		// No pod cgroup found (another cgroup layout): the containers' sums.
		pod.CPU, pod.Memory = sumContainers(t, pod.Containers)
	}

	volumes, local := p.volumeStats(uid, now, vols)
	pod.VolumeStats = volumes
	ephemeral.Used += local.Used
	ephemeral.InodesUsed += local.InodesUsed
	if p.nodeFs != nil {
		es := fsStats(t, *p.nodeFs)
		es.UsedBytes, es.InodesUsed = ptr(ephemeral.Used), ptr(ephemeral.InodesUsed)
		pod.EphemeralStorage = es
	}
	return pod, samples, nil
}

// containerStats samples one container: CPU time and working set from the
// runtime when it gives them, the rest from its cgroup, its writable layer
// from the runtime and its logs by disk usage.
func (p *Provider) containerStats(c *runtimeapi.Container, podCgroup string, crs *runtimeapi.ContainerStats, imageFs *statsapi.FsStats,
	imageDevice, logDir string, now time.Time, next map[string]cpuSample) (statsapi.ContainerStats, CgroupSample, error) {
	t := metav1.NewTime(now)
	name := c.GetLabels()[cri.LabelContainerName]
	if name == "" {
		name = c.GetMetadata().GetName()
	}
	cs := statsapi.ContainerStats{Name: name, StartTime: metav1.NewTime(time.Unix(0, c.GetCreatedAt()))}
	sample := CgroupSample{Name: c.GetId(), Image: c.GetImage().GetImage(), Container: name, StartTime: cs.StartTime.Time}
	var cg CgroupStats
	haveCgroup := false
	if podCgroup != "" {
		sample.ID = path.Join(podCgroup, c.GetId())
		var err error
		switch cg, err = p.readCgroup(sample.ID); {
		case err == nil:
			haveCgroup = true
		case errors.Is(err, errSkip):
		default:
			return cs, sample, err
		}
	}
	if u := crs.GetCpu().GetUsageCoreNanoSeconds(); u != nil {
		cg.CPUUsage = u.GetValue()
	} else if !haveCgroup {
		return cs, sample, errSkip // neither source knows it: exited since the listing
	}
	if ws := crs.GetMemory().GetWorkingSetBytes(); ws != nil {
		cg.WorkingSet = ws.GetValue()
	}
	sample.Stats = cg
	cs.CPU = &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: ptr(cg.CPUUsage), UsageNanoCores: p.rate(next, "container/"+c.GetId(), cg.CPUUsage, now)}
	if haveCgroup {
		cs.Memory = memoryStats(t, cg)
	} else {
		cs.Memory = &statsapi.MemoryStats{Time: t, WorkingSetBytes: ptr(cg.WorkingSet)}
	}
	if cg.Swap > 0 {
		cs.Swap = &statsapi.SwapStats{Time: t, SwapUsageBytes: ptr(cg.Swap)}
	}
	if wl := crs.GetWritableLayer(); wl != nil {
		rootfs := &statsapi.FsStats{Time: t}
		if imageFs != nil {
			rootfs.CapacityBytes, rootfs.AvailableBytes, rootfs.Inodes, rootfs.InodesFree = imageFs.CapacityBytes, imageFs.AvailableBytes, imageFs.Inodes, imageFs.InodesFree
		}
		rootfs.UsedBytes, rootfs.InodesUsed = ptr(wl.GetUsedBytes().GetValue()), ptr(wl.GetInodesUsed().GetValue())
		cs.Rootfs = rootfs
		sample.Fs = &FsUsage{Device: imageDevice, Used: wl.GetUsedBytes().GetValue(), InodesUsed: wl.GetInodesUsed().GetValue(),
			Capacity: deref(rootfs.CapacityBytes), Inodes: deref(rootfs.Inodes), InodesFree: deref(rootfs.InodesFree)}
	}
	dir := filepath.Join(logDir, name)
	if used, inodes, err := diskUsage(dir); err == nil {
		logs := &statsapi.FsStats{Time: t, UsedBytes: ptr(used), InodesUsed: ptr(inodes)}
		if fs := p.logFs; fs != nil {
			logs.CapacityBytes, logs.AvailableBytes, logs.Inodes, logs.InodesFree = ptr(fs.Capacity), ptr(fs.Available), ptr(fs.Inodes), ptr(fs.InodesFree)
		}
		cs.Logs = logs
	}
	return cs, sample, nil
}

// volumeStats measures the pod's volumes under RootDir/pods/<uid>/volumes
// and returns them with the usage of those that count as the pod's local
// ephemeral storage (emptyDir and configMap on the node's filesystem, as
// upstream counts them).
func (p *Provider) volumeStats(uid types.UID, now time.Time, vols map[string]cachedUsage) ([]statsapi.VolumeStats, FsUsage) {
	t := metav1.NewTime(now)
	podDir := filepath.Join(p.cfg.RootDir, "pods", string(uid))
	var podDev uint64
	if st, err := os.Stat(podDir); err == nil {
		podDev = deviceOf(st)
	}
	var out []statsapi.VolumeStats
	var local FsUsage
	for _, plugin := range []string{volumes.PluginEmptyDir, volumes.PluginConfigMap, volumes.PluginSecret, volumes.PluginDownwardAPI, volumes.PluginProjected} {
		entries, err := os.ReadDir(filepath.Join(podDir, "volumes", plugin))
		if err != nil {
			continue
		}
		for _, e := range entries {
			dir := filepath.Join(podDir, "volumes", plugin, e.Name())
			fs, err := statfs(dir)
			if err != nil {
				continue
			}
			used, inodes, ok := p.cachedDiskUsage(dir, now, vols)
			if !ok {
				continue
			}
			vs := statsapi.VolumeStats{Name: e.Name(), FsStats: *fsStats(t, fs)}
			vs.UsedBytes, vs.InodesUsed = ptr(used), ptr(inodes)
			out = append(out, vs)
			st, err := os.Stat(dir)
			if (plugin == volumes.PluginEmptyDir || plugin == volumes.PluginConfigMap) && err == nil && deviceOf(st) == podDev {
				local.Used += used
				local.InodesUsed += inodes
			}
		}
	}
	return out, local
}

// claimVolumes are the CSI volumes pods have through claims, by pod UID,
// named as the pods name them.
func (p *Provider) claimVolumes(now time.Time) map[types.UID][]statsapi.VolumeStats {
	out := map[types.UID][]statsapi.VolumeStats{}
	if p.cfg.ClaimVolumes == nil {
		return out
	}
	list := p.cfg.ClaimVolumes()
	if len(list) == 0 {
		return out
	}
	names := map[types.UID]map[string]string{} // pod → claim → volume name
	if p.cfg.Pods != nil {
		for _, pod := range p.cfg.Pods() {
			for _, v := range pod.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					if names[pod.UID] == nil {
						names[pod.UID] = map[string]string{}
					}
					names[pod.UID][v.PersistentVolumeClaim.ClaimName] = v.Name
				}
			}
		}
	}
	t := metav1.NewTime(now)
	for _, cv := range list {
		name := names[cv.PodUID][cv.ClaimName]
		if name == "" {
			name = cv.ClaimName
		}
		vs := statsapi.VolumeStats{Name: name, PVCRef: &statsapi.PVCReference{Name: cv.ClaimName, Namespace: cv.Namespace}, FsStats: statsapi.FsStats{Time: t}}
		if cv.HasBytes {
			vs.CapacityBytes, vs.AvailableBytes, vs.UsedBytes = ptr(uint64(cv.CapacityBytes)), ptr(uint64(cv.AvailableBytes)), ptr(uint64(cv.UsedBytes))
		}
		if cv.HasInodes {
			vs.Inodes, vs.InodesFree, vs.InodesUsed = ptr(uint64(cv.Inodes)), ptr(uint64(cv.InodesFree)), ptr(uint64(cv.InodesUsed))
		}
		out[cv.PodUID] = append(out[cv.PodUID], vs)
	}
	return out
}

// cachedDiskUsage walks dir at most once per volumeTTL, keeping the result
// in vols (the next sample's cache).
func (p *Provider) cachedDiskUsage(dir string, now time.Time, vols map[string]cachedUsage) (bytes, inodes uint64, ok bool) {
	if c, hit := p.volCache[dir]; hit && now.Sub(c.at) < volumeTTL {
		vols[dir] = c
		return c.bytes, c.inodes, true
	}
	bytes, inodes, err := diskUsage(dir)
	if err != nil {
		return 0, 0, false
	}
	vols[dir] = cachedUsage{at: now, bytes: bytes, inodes: inodes}
	return bytes, inodes, true
}
