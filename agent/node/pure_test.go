package node

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/internal/errdefs"
	"berth/internal/version"
)

const (
	mi = 1 << 20
	gi = 1 << 30
)

func quantities(t *testing.T, l v1.ResourceList) map[v1.ResourceName]string {
	t.Helper()
	out := map[v1.ResourceName]string{}
	for k, q := range l {
		out[k] = q.String()
	}
	return out
}

func TestCapacityAndAllocatable(t *testing.T) {
	m := Machine{NumCPU: 4, MemoryTotal: 8 * gi, FsCapacity: 100 * gi}
	capacity := Capacity(m, 110)
	want := map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "pods": "110"}
	if got := quantities(t, capacity); !equalMaps(got, want) {
		t.Fatalf("Capacity = %v, want %v", got, want)
	}
	for name, tc := range map[string]struct {
		system, kube v1.ResourceList
		eviction     Thresholds
		want         map[v1.ResourceName]string
	}{
		"kubelet defaults": {
			eviction: DefaultEvictionHard(),
			// memory less 100Mi, ephemeral storage less 10 %.
			want: map[v1.ResourceName]string{"cpu": "4", "memory": "8092Mi", "ephemeral-storage": "90Gi", "pods": "110"},
		},
		"reservations and thresholds add up": {
			system:   v1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("1Gi")},
			kube:     v1.ResourceList{"cpu": resource.MustParse("250m"), "memory": resource.MustParse("512Mi"), "ephemeral-storage": resource.MustParse("10Gi")},
			eviction: Thresholds{SignalMemoryAvailable: {Quantity: ptrQ("512Mi")}},
			want:     map[v1.ResourceName]string{"cpu": "3250m", "memory": "6Gi", "ephemeral-storage": "90Gi", "pods": "110"},
		},
		"no thresholds": {
			eviction: Thresholds{},
			want:     map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "pods": "110"},
		},
		"never below zero": {
			system:   v1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("9Gi")},
			eviction: Thresholds{},
			want:     map[v1.ResourceName]string{"cpu": "0", "memory": "0", "ephemeral-storage": "100Gi", "pods": "110"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := quantities(t, Allocatable(capacity, tc.system, tc.kube, tc.eviction))
			if !equalMaps(got, tc.want) {
				t.Fatalf("Allocatable = %v, want %v", got, tc.want)
			}
		})
	}
}

func ptrQ(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func equalMaps[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestParseThresholds(t *testing.T) {
	got, err := ParseThresholds("memory.available<100Mi, nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != DefaultEvictionHard().String() {
		t.Fatalf("parsed %q, want the defaults %q", got, DefaultEvictionHard())
	}
	if s := DefaultEvictionHard().String(); s != "imagefs.available<15%,memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%" {
		t.Fatalf("String = %q", s)
	}
	if got, err := ParseThresholds(""); err != nil || len(got) != 0 {
		t.Fatalf(`ParseThresholds("") = %v, %v`, got, err)
	}
	for _, bad := range []struct{ in, want string }{
		{"memory.available=100Mi", "want SIGNAL<VALUE"},
		{"cpu.available<1", `unknown signal "cpu.available"`},
		{"memory.available<lots", `quantity "lots"`},
		{"memory.available<-1Mi", `quantity "-1Mi"`},
		{"nodefs.available<150%", `percentage "150%"`},
		{"pid.available<10%,pid.available<5%", `signal "pid.available" given twice`},
	} {
		_, err := ParseThresholds(bad.in)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("ParseThresholds(%q) = %v, want an invalid-argument error containing %q", bad.in, err, bad.want)
		}
	}
}

func TestReadyCondition(t *testing.T) {
	now := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	ready := func(t string) *runtimeapi.RuntimeCondition {
		return &runtimeapi.RuntimeCondition{Type: t, Status: true}
	}
	netDown := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Reason: "NetworkPluginNotReady", Message: "Network plugin returns error: cni plugin not initialized"}
	rtDown := &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Reason: "Broken", Message: "shim gone"}
	status := func(cs ...*runtimeapi.RuntimeCondition) *runtimeapi.RuntimeStatus {
		return &runtimeapi.RuntimeStatus{Conditions: cs}
	}
	for name, tc := range map[string]struct {
		rs      RuntimeState
		status  v1.ConditionStatus
		reason  string
		message string
	}{
		"ready": {RuntimeState{Status: status(ready(runtimeapi.RuntimeReady), ready(runtimeapi.NetworkReady)), LastSuccess: now.Add(-time.Second)},
			v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
		"never checked": {RuntimeState{}, v1.ConditionFalse, "KubeletNotReady", "container runtime status check may not have completed yet"},
		"network not ready": {RuntimeState{Status: status(ready(runtimeapi.RuntimeReady), netDown), LastSuccess: now},
			v1.ConditionFalse, "KubeletNotReady",
			"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"},
		"runtime not ready": {RuntimeState{Status: status(rtDown, ready(runtimeapi.NetworkReady)), LastSuccess: now},
			v1.ConditionFalse, "KubeletNotReady", "container runtime not ready: RuntimeReady=false reason:Broken message:shim gone"},
		"both, aggregated": {RuntimeState{Status: status(rtDown, netDown), LastSuccess: now},
			v1.ConditionFalse, "KubeletNotReady",
			"[container runtime not ready: RuntimeReady=false reason:Broken message:shim gone, container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized]"},
		"network condition missing": {RuntimeState{Status: status(ready(runtimeapi.RuntimeReady)), LastSuccess: now},
			v1.ConditionFalse, "KubeletNotReady", "container runtime network not ready: <nil>"},
		"status failing, within the threshold": {RuntimeState{Status: status(ready(runtimeapi.RuntimeReady), ready(runtimeapi.NetworkReady)), LastSuccess: now.Add(-20 * time.Second), Err: errors.New("unavailable")},
			v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
		"status failing past the threshold": {RuntimeState{Status: status(ready(runtimeapi.RuntimeReady), ready(runtimeapi.NetworkReady)), LastSuccess: now.Add(-time.Minute), Err: errors.New("unavailable")},
			v1.ConditionFalse, "KubeletNotReady", "container runtime is down"},
	} {
		t.Run(name, func(t *testing.T) {
			c := ReadyCondition(tc.rs, Capacity(fixedMachine, 110), now, DefaultRuntimeDownAfter)
			if c.Type != v1.NodeReady || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Fatalf("ReadyCondition = %+v, want %s %s %q", c, tc.status, tc.reason, tc.message)
			}
		})
	}
}

func TestReadyConditionNeedsCapacity(t *testing.T) {
	now := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	rs := RuntimeState{LastSuccess: now, Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true}}}}
	c := ReadyCondition(rs, v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}, now, DefaultRuntimeDownAfter)
	if c.Status != v1.ConditionFalse || c.Message != "missing node capacity for resources: memory, pods, ephemeral-storage" {
		t.Fatalf("ReadyCondition without capacity = %+v", c)
	}
}

func TestPressureConditions(t *testing.T) {
	healthy := Machine{NumCPU: 2, MemoryTotal: 8 * gi, MemoryAvailable: 4 * gi, FsCapacity: 100 * gi, FsAvailable: 50 * gi,
		FsInodes: 1000, FsInodesFree: 500, PIDMax: 4096, Processes: 300}
	pidLimit, _ := ParseThresholds("pid.available<10%")
	for name, tc := range map[string]struct {
		mutate            func(*Machine)
		th                Thresholds
		memory, disk, pid v1.ConditionStatus
	}{
		"healthy":                     {func(*Machine) {}, DefaultEvictionHard(), "False", "False", "False"},
		"memory below 100Mi":          {func(m *Machine) { m.MemoryAvailable = 99 * mi }, DefaultEvictionHard(), "True", "False", "False"},
		"memory at 100Mi":             {func(m *Machine) { m.MemoryAvailable = 100 * mi }, DefaultEvictionHard(), "False", "False", "False"},
		"nodefs below 10%":            {func(m *Machine) { m.FsAvailable = 9 * gi }, DefaultEvictionHard(), "False", "True", "False"},
		"imagefs (same fs) below 15%": {func(m *Machine) { m.FsAvailable = 14 * gi }, DefaultEvictionHard(), "False", "True", "False"},
		"inodes below 5%":             {func(m *Machine) { m.FsInodesFree = 40 }, DefaultEvictionHard(), "False", "True", "False"},
		"pids without a threshold":    {func(m *Machine) { m.Processes = 4090 }, DefaultEvictionHard(), "False", "False", "False"},
		"pids below 10%":              {func(m *Machine) { m.Processes = 3700 }, pidLimit, "False", "False", "True"},
		"no thresholds":               {func(m *Machine) { m.MemoryAvailable, m.FsAvailable = 0, 0 }, Thresholds{}, "False", "False", "False"},
	} {
		t.Run(name, func(t *testing.T) {
			m := healthy
			tc.mutate(&m)
			cs := PressureConditions(m, tc.th)
			got := map[v1.NodeConditionType]v1.ConditionStatus{}
			for _, c := range cs {
				got[c.Type] = c.Status
			}
			want := map[v1.NodeConditionType]v1.ConditionStatus{v1.NodeMemoryPressure: tc.memory, v1.NodeDiskPressure: tc.disk, v1.NodePIDPressure: tc.pid}
			if !equalMaps(got, want) {
				t.Fatalf("pressure = %v, want %v", got, want)
			}
		})
	}
	cs := PressureConditions(Machine{MemoryTotal: gi, MemoryAvailable: mi}, DefaultEvictionHard())
	if cs[0].Reason != "KubeletHasInsufficientMemory" || cs[0].Message != "kubelet has insufficient memory available" ||
		cs[1].Reason != "KubeletHasNoDiskPressure" || cs[2].Reason != "KubeletHasSufficientPID" || cs[2].Message != "kubelet has sufficient PID available" {
		t.Fatalf("reasons and messages = %+v", cs)
	}
	cs = PressureConditionsOf([]v1.NodeConditionType{v1.NodeDiskPressure})
	if cs[0].Status != v1.ConditionFalse || cs[1].Status != v1.ConditionTrue || cs[1].Reason != "KubeletHasDiskPressure" || cs[2].Status != v1.ConditionFalse {
		t.Fatalf("the eviction manager's DiskPressure: %+v", cs)
	}
}

func TestSetConditionsStampsHeartbeatAndTransition(t *testing.T) {
	t1 := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	t2, t3 := t1.Add(10*time.Second), t1.Add(20*time.Second)
	ready := Condition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	notReady := Condition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: "x"}
	foreign := v1.NodeCondition{Type: "NetworkUnavailable", Status: v1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(t1.Add(-time.Hour))}

	c1 := SetConditions([]v1.NodeCondition{foreign}, []Condition{ready}, t1)
	if len(c1) != 2 || c1[0] != foreign || c1[1].LastTransitionTime.Time != t1 || c1[1].LastHeartbeatTime.Time != t1 || c1[1].Status != v1.ConditionTrue {
		t.Fatalf("new condition = %+v", c1)
	}
	c2 := SetConditions(c1, []Condition{ready}, t2)
	if c2[1].LastTransitionTime.Time != t1 || c2[1].LastHeartbeatTime.Time != t2 {
		t.Fatalf("unchanged condition: transition %v heartbeat %v, want %v and %v", c2[1].LastTransitionTime, c2[1].LastHeartbeatTime, t1, t2)
	}
	if c1[1].LastHeartbeatTime.Time != t1 {
		t.Fatal("SetConditions modified its input")
	}
	c3 := SetConditions(c2, []Condition{notReady}, t3)
	if c3[1].LastTransitionTime.Time != t3 || c3[1].LastHeartbeatTime.Time != t3 || c3[1].Reason != "KubeletNotReady" || c3[1].Message != "x" {
		t.Fatalf("changed condition = %+v", c3[1])
	}
	if c3[0] != foreign {
		t.Fatalf("a condition set by someone else changed: %+v", c3[0])
	}
}

func TestStatusChangedIgnoresHeartbeats(t *testing.T) {
	t1 := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	base := v1.NodeStatus{Conditions: SetConditions(nil, []Condition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}, t1)}
	later := base.DeepCopy()
	later.Conditions = SetConditions(later.Conditions, []Condition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}, t1.Add(time.Minute))
	if StatusChanged(&base, later) {
		t.Fatal("a heartbeat alone counts as a change")
	}
	flipped := later.DeepCopy()
	flipped.Conditions = SetConditions(flipped.Conditions, []Condition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}, t1.Add(time.Minute))
	if !StatusChanged(&base, flipped) {
		t.Fatal("a status flip is not a change")
	}
	imgs := later.DeepCopy()
	imgs.Images = []v1.ContainerImage{{Names: []string{"a"}, SizeBytes: 1}}
	if !StatusChanged(&base, imgs) {
		t.Fatal("new images are not a change")
	}
}

func TestShouldWrite(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name           string
		changed, force bool
		last, now      time.Time
		want           bool
	}{
		{"first write", false, false, time.Time{}, t0, true},
		{"unchanged within the report interval", false, false, t0, t0.Add(4 * time.Minute), false},
		{"unchanged at the report interval", false, false, t0, t0.Add(5 * time.Minute), true},
		{"changed", true, false, t0, t0.Add(time.Second), true},
		{"forced", false, true, t0, t0.Add(time.Second), true},
	} {
		if got := shouldWrite(tc.changed, tc.force, tc.last, tc.now, DefaultStatusReportFrequency); got != tc.want {
			t.Errorf("%s: shouldWrite = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNodeImages(t *testing.T) {
	var imgs []*runtimeapi.Image
	for i := range 60 {
		imgs = append(imgs, &runtimeapi.Image{Id: "sha256:" + string(rune('a'+i%26)), Size: uint64(i + 1), RepoTags: []string{"r/img:" + string(rune('a'+i%26))}})
	}
	imgs[0].RepoDigests = []string{"r/img@sha256:1"}
	imgs[0].RepoTags = []string{"t1", "t2", "t3", "t4", "t5"}
	imgs[0].Size = 1000
	got := NodeImages(imgs, MaxImagesInNodeStatus)
	if len(got) != 50 {
		t.Fatalf("%d images, want the 50 largest", len(got))
	}
	if got[0].SizeBytes != 1000 || strings.Join(got[0].Names, ",") != "r/img@sha256:1,t1,t2,t3,t4" {
		t.Fatalf("largest image = %+v, want digests first, then tags, 5 names at most", got[0])
	}
	for i := 1; i < len(got); i++ {
		if got[i].SizeBytes > got[i-1].SizeBytes {
			t.Fatalf("images not largest first at %d: %d after %d", i, got[i].SizeBytes, got[i-1].SizeBytes)
		}
	}
	if got[49].SizeBytes != 12 {
		t.Fatalf("smallest kept = %d, want 12 (1000, then 60 down to 12)", got[49].SizeBytes)
	}
}

// Regression: equal-sized images listed in another order made every sync
// look like a status change.
func TestNodeImagesOrderDoesNotDependOnTheListing(t *testing.T) {
	a := &runtimeapi.Image{Id: "sha256:a", Size: 10, RepoTags: []string{"a:1"}}
	b := &runtimeapi.Image{Id: "sha256:b", Size: 10, RepoTags: []string{"b:1"}}
	x, y := NodeImages([]*runtimeapi.Image{a, b}, 50), NodeImages([]*runtimeapi.Image{b, a}, 50)
	if x[0].Names[0] != "a:1" || y[0].Names[0] != "a:1" {
		t.Fatalf("order depends on the listing: %v vs %v", x, y)
	}
}

func TestReconcileLabels(t *testing.T) {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		v1.LabelHostname: "old-name", "team": "a", v1.LabelOSStable: runtime.GOOS,
	}}}
	if !ReconcileLabels(n, DefaultLabels("new-name")) {
		t.Fatal("no change reported")
	}
	want := DefaultLabels("new-name")
	want["team"] = "a"
	if !equalMaps(n.Labels, want) {
		t.Fatalf("labels = %v, want %v", n.Labels, want)
	}
	if ReconcileLabels(n, DefaultLabels("new-name")) {
		t.Fatal("a second reconcile reported a change")
	}
}

func TestNodeInfoAndAddresses(t *testing.T) {
	info := NodeInfo(SystemInfo{KernelVersion: "6.1.0-13-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)", MachineID: "m", BootID: "b"},
		&runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "1.6.20"})
	if info.ContainerRuntimeVersion != "containerd://1.6.20" || info.KubeletVersion != version.Kubernetes() ||
		info.OperatingSystem != runtime.GOOS || info.Architecture != runtime.GOARCH || info.KernelVersion != "6.1.0-13-amd64" ||
		info.OSImage != "Debian GNU/Linux 12 (bookworm)" || info.MachineID != "m" || info.BootID != "b" {
		t.Fatalf("NodeInfo = %+v", info)
	}
	addrs := Addresses([]byte{10, 0, 0, 5}, "node-a")
	if len(addrs) != 2 || addrs[0] != (v1.NodeAddress{Type: v1.NodeInternalIP, Address: "10.0.0.5"}) || addrs[1] != (v1.NodeAddress{Type: v1.NodeHostName, Address: "node-a"}) {
		t.Fatalf("Addresses = %v", addrs)
	}
	si := ReadSystemInfo()
	if si.KernelVersion == "" || si.OSImage == "" || si.BootID == "" {
		t.Fatalf("ReadSystemInfo on this machine = %+v: kernel, OS image and boot ID should be readable", si)
	}
}

func TestParsers(t *testing.T) {
	total, avail, err := parseMeminfo([]byte("MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   12288000 kB\n"))
	if err != nil || total != 24576000*1024 || avail != 12288000*1024 {
		t.Fatalf("parseMeminfo = %d %d %v", total, avail, err)
	}
	if _, _, err := parseMeminfo([]byte("MemFree: 1 kB\n")); err == nil {
		t.Fatal("parseMeminfo without MemTotal: no error")
	}
	if got := parseOSRelease([]byte("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Fatalf("parseOSRelease = %q", got)
	}
	if got := parseOSRelease([]byte("NAME=x\n")); got != "Linux" {
		t.Fatalf("parseOSRelease without PRETTY_NAME = %q", got)
	}
	if got := parseLoadavgTasks([]byte("0.10 0.20 0.30 2/345 6789\n")); got != 345 {
		t.Fatalf("parseLoadavgTasks = %d", got)
	}
	route := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"eth1\t0000FEA9\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n" +
		"eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
	if got := defaultRouteInterface([]byte(route)); got != "eth0" {
		t.Fatalf("defaultRouteInterface = %q", got)
	}
	if got := defaultRouteInterface([]byte("Iface\tDestination\n")); got != "" {
		t.Fatalf("defaultRouteInterface without a default route = %q", got)
	}
	m, err := ReadMachine(t.TempDir())
	if err != nil || m.NumCPU != runtime.NumCPU() || m.MemoryTotal == 0 || m.FsCapacity == 0 || m.PIDMax == 0 || m.Processes == 0 {
		t.Fatalf("ReadMachine on this machine = %+v, %v", m, err)
	}
}
