package stats

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	agentcsi "berth/agent/csi"
	"berth/cri"
	"berth/cri/critest"
	"berth/csi/nodeclient"
	"berth/internal/errdefs"
)

// fakeTree writes files (path → content) under root.
func fakeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// v1Cgroup returns a cgroup v1 cgroup's files at rel: cpu in ns, memory
// figures in bytes.
func v1Cgroup(rel string, cpu, usage, inactiveFile, rss, pgfault, pids uint64) map[string]string {
	return map[string]string{
		"cpuacct/" + rel + "/cpuacct.usage":        fmt.Sprint(cpu),
		"cpuacct/" + rel + "/cpuacct.stat":         "user 30\nsystem 10\n",
		"memory/" + rel + "/memory.usage_in_bytes": fmt.Sprint(usage),
		"memory/" + rel + "/memory.limit_in_bytes": "9223372036854771712",
		"memory/" + rel + "/memory.stat": fmt.Sprintf("cache 1\nrss 2\ntotal_cache %d\ntotal_rss %d\ntotal_inactive_file %d\ntotal_active_file 7\ntotal_pgfault %d\ntotal_pgmajfault 3\n",
			usage-rss, rss, inactiveFile, pgfault),
		"pids/" + rel + "/pids.current": fmt.Sprint(pids),
		"pids/" + rel + "/cgroup.procs": "4242\n",
	}
}

// statsEnv is a provider over a fake runtime, a fake cgroup v1 tree and a
// fake procfs, with one running pod "ns/web" (container "app").
type statsEnv struct {
	srv                        *critest.Server
	p                          *Provider
	cgroupRoot, procRoot, root string
	sandboxID, containerID     string
	now                        time.Time
	podCgroup                  string
}

func newStatsEnv(t *testing.T) *statsEnv {
	t.Helper()
	imageFs := t.TempDir()
	e := &statsEnv{srv: critest.NewServer(t, critest.WithImageFsMountpoint(imageFs)), now: time.Unix(1_700_000_000, 0)}
	e.srv.AddImage("busybox")
	ctx := context.Background()
	c, err := cri.New(ctx, cri.Config{Endpoint: e.srv.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	labels := map[string]string{cri.LabelPodUID: "u1", cri.LabelPodName: "web", cri.LabelPodNamespace: "ns"}
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "u1"}, Labels: labels}
	if e.sandboxID, err = c.RunPodSandbox(ctx, sbCfg, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PullImage(ctx, "busybox", nil, nil); err != nil {
		t.Fatal(err)
	}
	e.containerID, err = c.CreateContainer(ctx, e.sandboxID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
		Labels: map[string]string{cri.LabelPodUID: "u1", cri.LabelPodName: "web", cri.LabelPodNamespace: "ns", cri.LabelContainerName: "app"},
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartContainer(ctx, e.containerID); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	e.cgroupRoot, e.procRoot, e.root = filepath.Join(dir, "cgroup"), filepath.Join(dir, "proc"), filepath.Join(dir, "root")
	logDir := filepath.Join(dir, "logs")
	e.podCgroup = "/kubepods/burstable/podu1"
	for _, files := range []map[string]string{
		v1Cgroup("", 50e9, 8<<30, 1<<30, 3<<30, 1000, 0),
		v1Cgroup(e.podCgroup, 2e9, 300<<20, 100<<20, 150<<20, 60, 3),
		v1Cgroup(e.podCgroup+"/"+e.sandboxID, 1e6, 1<<20, 0, 1<<20, 1, 1),
		v1Cgroup(e.podCgroup+"/"+e.containerID, 1.5e9, 200<<20, 50<<20, 120<<20, 40, 2),
	} {
		fakeTree(t, e.cgroupRoot, files)
	}
	fakeTree(t, e.procRoot, map[string]string{
		"meminfo":            "MemTotal:       16384000 kB\nMemFree:         1000 kB\nInactive(file):  2000 kB\n",
		"stat":               "cpu  1 2 3\nbtime 1699990000\n",
		"sys/kernel/pid_max": "4194304\n",
		"self/net/dev": "Inter-|   Receive                                                |  Transmit\n" +
			" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
			"    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n" +
			"  eth0: 5000 50 1 2 0 0 0 0 7000 70 3 4 0 0 0 0\n" +
			"vethab: 9 9 9 9 0 0 0 0 9 9 9 9 0 0 0 0\n",
		"4242/net/dev": "h1\nh2\n  eth0: 1234 12 0 0 0 0 0 0 4321 21 0 0 0 0 0 0\n",
	})
	fakeTree(t, e.root, map[string]string{
		"pods/u1/volumes/kubernetes.io~empty-dir/cache/data":    strings.Repeat("x", 10000),
		"pods/u1/volumes/kubernetes.io~configmap/config/a.conf": "k=v\n",
	})
	fakeTree(t, logDir, map[string]string{"ns_web_u1/app/0.log": strings.Repeat("log line\n", 1000)})

	cg := Cgroups{Root: e.cgroupRoot}
	e.p, err = New(Config{
		Runtime: c, NodeName: "node-1", RootDir: e.root, PodLogDir: logDir, Cgroups: &cg, ProcRoot: e.procRoot,
		MountInfo: filepath.Join(dir, "no-mountinfo"), Now: func() time.Time { return e.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestLatestBeforeFirstSampleIsUnavailable(t *testing.T) {
	e := newStatsEnv(t)
	if _, err := e.p.Latest(); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("Latest before Refresh: %v, want ErrUnavailable", err)
	}
}

func TestSummaryFromRuntimeCgroupsAndProc(t *testing.T) {
	e := newStatsEnv(t)
	ctx := context.Background()
	if err := e.srv.SetContainerUsage(e.containerID, critest.ContainerUsage{CPUCoreNanoSeconds: 1e9, WorkingSetBytes: 140 << 20, WritableLayerBytes: 4096, WritableLayerInodes: 3}); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := e.p.Latest()
	if err != nil {
		t.Fatal(err)
	}
	s := snap.Summary
	node := s.Node
	if node.NodeName != "node-1" || node.StartTime.Unix() != 1699990000 {
		t.Errorf("node %s started %v", node.NodeName, node.StartTime)
	}
	if got := *node.CPU.UsageCoreNanoSeconds; got != 50e9 {
		t.Errorf("node CPU %d, want the root cgroup's 50e9", got)
	}
	if node.CPU.UsageNanoCores != nil {
		t.Errorf("a first sample has no rate, got %d", *node.CPU.UsageNanoCores)
	}
	if ws, avail := *node.Memory.WorkingSetBytes, *node.Memory.AvailableBytes; ws != 7<<30 || avail != 16384000*1024-7<<30 {
		t.Errorf("node working set %d available %d", ws, avail)
	}
	if node.Network == nil || node.Network.Name != "eth0" || *node.Network.RxBytes != 5000 || *node.Network.TxErrors != 3 || len(node.Network.Interfaces) != 1 {
		t.Errorf("node network %+v (lo and veth must be left out)", node.Network)
	}
	if node.Fs == nil || *node.Fs.CapacityBytes == 0 || node.Rlimit == nil || *node.Rlimit.MaxPID != 4194304 {
		t.Errorf("node fs %+v rlimit %+v", node.Fs, node.Rlimit)
	}
	if node.Runtime == nil || node.Runtime.ImageFs == nil || *node.Runtime.ImageFs.InodesUsed != 1 {
		t.Errorf("image fs from ImageFsInfo: %+v", node.Runtime)
	}

	if len(s.Pods) != 1 {
		t.Fatalf("pods %+v", s.Pods)
	}
	pod := s.Pods[0]
	if pod.PodRef != (statsapi.PodReference{Name: "web", Namespace: "ns", UID: "u1"}) {
		t.Errorf("podRef %+v", pod.PodRef)
	}
	if *pod.CPU.UsageCoreNanoSeconds != 2e9 || *pod.Memory.WorkingSetBytes != 200<<20 || *pod.Memory.RSSBytes != 150<<20 || *pod.ProcessStats.ProcessCount != 3 {
		t.Errorf("pod cpu %d ws %d rss %d procs %d", *pod.CPU.UsageCoreNanoSeconds, *pod.Memory.WorkingSetBytes, *pod.Memory.RSSBytes, *pod.ProcessStats.ProcessCount)
	}
	if pod.Network == nil || pod.Network.Name != "eth0" || *pod.Network.RxBytes != 1234 || *pod.Network.TxBytes != 4321 {
		t.Errorf("pod network (the sandbox process's namespace) %+v", pod.Network)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("containers %+v", pod.Containers)
	}
	ctr := pod.Containers[0]
	if ctr.Name != "app" || *ctr.CPU.UsageCoreNanoSeconds != 1e9 || *ctr.Memory.WorkingSetBytes != 140<<20 {
		t.Errorf("container %s cpu %d ws %d: CPU and working set come from the runtime", ctr.Name, *ctr.CPU.UsageCoreNanoSeconds, *ctr.Memory.WorkingSetBytes)
	}
	if *ctr.Memory.UsageBytes != 200<<20 || *ctr.Memory.RSSBytes != 120<<20 || *ctr.Memory.PageFaults != 40 || *ctr.Memory.MajorPageFaults != 3 {
		t.Errorf("container memory from its cgroup: %+v", ctr.Memory)
	}
	if ctr.Rootfs == nil || *ctr.Rootfs.UsedBytes != 4096 || *ctr.Rootfs.InodesUsed != 3 {
		t.Errorf("rootfs %+v", ctr.Rootfs)
	}
	if ctr.Logs == nil || *ctr.Logs.UsedBytes < 9000 || *ctr.Logs.InodesUsed != 2 {
		t.Errorf("logs %+v", ctr.Logs)
	}
	vols := map[string]statsapi.VolumeStats{}
	for _, v := range pod.VolumeStats {
		vols[v.Name] = v
	}
	if len(vols) != 2 || *vols["cache"].UsedBytes < 10000 || *vols["config"].InodesUsed != 2 {
		t.Errorf("volumes %+v", pod.VolumeStats)
	}
	logs, rootfs, cache, config := *ctr.Logs.UsedBytes, *ctr.Rootfs.UsedBytes, *vols["cache"].UsedBytes, *vols["config"].UsedBytes
	if got, want := *pod.EphemeralStorage.UsedBytes, logs+rootfs+cache+config; got != want {
		t.Errorf("ephemeral storage %d, want rootfs+logs+emptyDir+configMap %d", got, want)
	}

	// cAdvisor's view: the node, the pod and the container cgroups.
	ids := map[string]CgroupSample{}
	for _, c := range snap.Cgroups {
		ids[c.ID] = c
	}
	if c, ok := ids[e.podCgroup+"/"+e.containerID]; !ok || c.Name != e.containerID || c.Container != "app" || c.Pod != "web" || c.Namespace != "ns" ||
		c.Image != "busybox" || c.Stats.CPUUser != 30e7 {
		t.Errorf("container cgroup sample %+v", c)
	}
	if _, ok := ids["/"]; !ok || len(snap.Cgroups) != 3 {
		t.Errorf("cgroup samples %+v", snap.Cgroups)
	}
}

func TestImageFsForTheImageCollector(t *testing.T) {
	e := newStatsEnv(t)
	ctx := context.Background()
	if _, _, err := e.p.ImageFs(ctx); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("before the first sample: %v, want ErrUnavailable", err)
	}
	if err := e.p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	capacity, available, err := e.p.ImageFs(ctx)
	if err != nil || capacity <= 0 || available <= 0 || available > capacity {
		t.Errorf("ImageFs = %d, %d, %v: want the image filesystem's (the temp dir's) size", capacity, available, err)
	}
}

func TestClaimVolumesAreNamedAsThePodNamesThem(t *testing.T) {
	e := newStatsEnv(t)
	e.p.cfg.ClaimVolumes = func() []agentcsi.ClaimVolumeStats {
		return []agentcsi.ClaimVolumeStats{
			{PodUID: "u1", Namespace: "ns", ClaimName: "data-claim", VolumeStats: nodeclient.VolumeStats{CapacityBytes: 100, AvailableBytes: 60, UsedBytes: 40, HasBytes: true}},
			{PodUID: "gone", Namespace: "ns", ClaimName: "other", VolumeStats: nodeclient.VolumeStats{Inodes: 9, HasInodes: true}},
		}
	}
	e.p.cfg.Pods = func() []v1.Pod {
		return []v1.Pod{{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}},
		}}}}
	}
	if err := e.p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap, _ := e.p.Latest()
	var got *statsapi.VolumeStats
	for i, v := range snap.Summary.Pods[0].VolumeStats {
		if v.PVCRef != nil {
			got = &snap.Summary.Pods[0].VolumeStats[i]
		}
	}
	if got == nil || got.Name != "data" || *got.PVCRef != (statsapi.PVCReference{Name: "data-claim", Namespace: "ns"}) ||
		*got.CapacityBytes != 100 || *got.UsedBytes != 40 || got.Inodes != nil {
		t.Errorf("claim volume %+v in %+v", got, snap.Summary.Pods[0].VolumeStats)
	}
	// Not part of the pod's ephemeral storage.
	if *snap.Summary.Pods[0].EphemeralStorage.UsedBytes > 1<<20 {
		t.Errorf("ephemeral storage %d counts the claim", *snap.Summary.Pods[0].EphemeralStorage.UsedBytes)
	}
}

func TestCPURateFromConsecutiveSamples(t *testing.T) {
	e := newStatsEnv(t)
	ctx := context.Background()
	if err := e.p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	// 10 s later: the container used 5 more CPU-seconds (half a core), the
	// pod 6, the node 15.
	e.now = e.now.Add(10 * time.Second)
	if err := e.srv.SetContainerUsage(e.containerID, critest.ContainerUsage{CPUCoreNanoSeconds: 5e9}); err != nil {
		t.Fatal(err)
	}
	fakeTree(t, e.cgroupRoot, map[string]string{
		"cpuacct/" + e.podCgroup + "/cpuacct.usage": "8000000000",
		"cpuacct/cpuacct.usage":                     "65000000000",
	})
	if err := e.p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	snap, _ := e.p.Latest()
	pod := snap.Summary.Pods[0]
	for _, c := range []struct {
		what string
		cpu  *statsapi.CPUStats
		want uint64
	}{
		{"node", snap.Summary.Node.CPU, 1.5e9},
		{"pod", pod.CPU, 0.6e9},
		{"container", pod.Containers[0].CPU, 0.5e9},
	} {
		if c.cpu.UsageNanoCores == nil || *c.cpu.UsageNanoCores != c.want {
			t.Errorf("%s usageNanoCores %v, want %d", c.what, c.cpu.UsageNanoCores, c.want)
		}
	}
}

func TestCgroupV2(t *testing.T) {
	root := t.TempDir()
	fakeTree(t, root, map[string]string{
		"cgroup.controllers":            "cpu memory pids\n",
		"kubepods/podu1/cpu.stat":       "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n",
		"kubepods/podu1/memory.current": "1000000\n",
		"kubepods/podu1/memory.max":     "max\n",
		"kubepods/podu1/memory.stat":    "anon 600000\nfile 400000\nfile_mapped 10\ninactive_file 300000\nactive_file 100000\npgfault 77\npgmajfault 7\n",
		"kubepods/podu1/pids.current":   "5\n",
		"kubepods/podu1/pids.max":       "max\n",
	})
	cg := DetectCgroups(root)
	if !cg.V2 {
		t.Fatal("cgroup.controllers at the root: want v2")
	}
	s, err := cg.Read("/kubepods/podu1")
	if err != nil {
		t.Fatal(err)
	}
	want := CgroupStats{CPUUsage: 2500e3, CPUUser: 2000e3, CPUSystem: 500e3, MemoryUsage: 1e6, WorkingSet: 700000, RSS: 600000, Cache: 400000,
		MappedFile: 10, ActiveFile: 100000, InactiveFile: 300000, PageFaults: 77, MajorPageFaults: 7, Processes: 5}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("v2 stats\n got %+v\nwant %+v", s, want)
	}
	if _, err := cg.Read("/kubepods/gone"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing cgroup: %v, want ErrNotExist", err)
	}
}

func TestGonePodIsLeftOutNotAnError(t *testing.T) {
	e := newStatsEnv(t)
	if err := os.RemoveAll(filepath.Join(e.cgroupRoot, "cpuacct", e.podCgroup)); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Refresh(context.Background()); err != nil {
		t.Fatalf("a pod whose cgroup went away between listing and reading: %v", err)
	}
	snap, _ := e.p.Latest()
	if len(snap.Summary.Pods) != 0 {
		t.Errorf("pods %+v", snap.Summary.Pods)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{NodeName: "n", RootDir: "/r"}, "Config.Runtime is required"},
		{Config{Runtime: &cri.Client{}, RootDir: "/r"}, "Config.NodeName is required"},
		{Config{Runtime: &cri.Client{}, NodeName: "n"}, "Config.RootDir is required"},
		{Config{Runtime: &cri.Client{}, NodeName: "n", RootDir: "/r", Interval: -time.Second}, "Config.Interval -1s: must not be negative"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("New(%+v): %v, want %q", c.cfg, err, c.want)
		}
	}
}
