package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// rl builds a ResourceList from name/quantity pairs: rl("cpu", "100m", "memory", "1Gi").
func rl(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func ctr(name string, req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

func podWith(containers []v1.Container, inits ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "1234-abcd"},
		Spec:       v1.PodSpec{Containers: containers, InitContainers: inits},
	}
}

var always = v1.ContainerRestartPolicyAlways

func TestClass(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{"no resources", podWith([]v1.Container{ctr("a", nil, nil)}), v1.PodQOSBestEffort},
		{"only extended resources", podWith([]v1.Container{ctr("a", rl("example.com/gpu", "1"), rl("example.com/gpu", "1"))}), v1.PodQOSBestEffort},
		{"zero requests count as unset", podWith([]v1.Container{ctr("a", rl("cpu", "0", "memory", "0"), nil)}), v1.PodQOSBestEffort},
		{"requests equal limits", podWith([]v1.Container{ctr("a", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}), v1.PodQOSGuaranteed},
		{"limits only: requests default to limits", podWith([]v1.Container{ctr("a", nil, rl("cpu", "500m", "memory", "128Mi"))}), v1.PodQOSGuaranteed},
		{"equal in different units", podWith([]v1.Container{ctr("a", rl("cpu", "1000m", "memory", "1024Mi"), rl("cpu", "1", "memory", "1Gi"))}), v1.PodQOSGuaranteed},
		{"request below limit", podWith([]v1.Container{ctr("a", rl("cpu", "500m", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))}), v1.PodQOSBurstable},
		{"cpu limit only", podWith([]v1.Container{ctr("a", nil, rl("cpu", "1"))}), v1.PodQOSBurstable},
		{"request only", podWith([]v1.Container{ctr("a", rl("memory", "10Mi"), nil)}), v1.PodQOSBurstable},
		{"one guaranteed one besteffort container", podWith([]v1.Container{
			ctr("a", nil, rl("cpu", "1", "memory", "1Gi")), ctr("b", nil, nil)}), v1.PodQOSBurstable},
		{"two guaranteed containers", podWith([]v1.Container{
			ctr("a", nil, rl("cpu", "1", "memory", "1Gi")), ctr("b", rl("cpu", "2", "memory", "2Gi"), rl("cpu", "2", "memory", "2Gi"))}), v1.PodQOSGuaranteed},
		{"init container without resources breaks guaranteed", podWith(
			[]v1.Container{ctr("a", nil, rl("cpu", "1", "memory", "1Gi"))}, ctr("init", nil, nil)), v1.PodQOSBurstable},
		{"init container with requests makes burstable", podWith(
			[]v1.Container{ctr("a", nil, nil)}, ctr("init", rl("cpu", "100m"), nil)), v1.PodQOSBurstable},
		{"guaranteed init and app containers", podWith(
			[]v1.Container{ctr("a", nil, rl("cpu", "1", "memory", "1Gi"))}, ctr("init", nil, rl("cpu", "1", "memory", "1Gi"))), v1.PodQOSGuaranteed},
		{"hugepages do not matter", podWith([]v1.Container{ctr("a", rl("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "2Mi"),
			rl("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi"))}), v1.PodQOSGuaranteed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Class(tt.pod); got != tt.want {
				t.Fatalf("Class = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestClassPodLevelResources(t *testing.T) {
	p := podWith([]v1.Container{ctr("a", nil, nil)})
	p.Spec.Resources = &v1.ResourceRequirements{Limits: rl("cpu", "1", "memory", "1Gi")}
	if got := Class(p); got != v1.PodQOSGuaranteed {
		t.Fatalf("pod-level limits only: Class = %s, want Guaranteed", got)
	}
	p.Spec.Resources = &v1.ResourceRequirements{Requests: rl("cpu", "1")}
	if got := Class(p); got != v1.PodQOSBurstable {
		t.Fatalf("pod-level requests only: Class = %s, want Burstable", got)
	}
}

func TestCgroupParent(t *testing.T) {
	guaranteed := podWith([]v1.Container{ctr("a", nil, rl("cpu", "1", "memory", "1Gi"))})
	burstable := podWith([]v1.Container{ctr("a", rl("cpu", "1"), nil)})
	besteffort := podWith([]v1.Container{ctr("a", nil, nil)})
	tests := []struct {
		root string
		pod  *v1.Pod
		want string
	}{
		{"", guaranteed, "/kubepods/pod1234-abcd"},
		{"/", burstable, "/kubepods/burstable/pod1234-abcd"},
		{"", besteffort, "/kubepods/besteffort/pod1234-abcd"},
		{"/berth", besteffort, "/berth/kubepods/besteffort/pod1234-abcd"},
		{"berth/node1/", guaranteed, "/berth/node1/kubepods/pod1234-abcd"},
	}
	for _, tt := range tests {
		if got := CgroupParent(tt.root, tt.pod); got != tt.want {
			t.Errorf("CgroupParent(%q, %s) = %q, want %q", tt.root, Class(tt.pod), got, tt.want)
		}
	}
}

func TestMilliCPUToShares(t *testing.T) {
	for _, tt := range []struct{ milli, want int64 }{
		{0, 2}, {1, 2}, {1, 2}, {2, 2}, {3, 3}, {10, 10}, {100, 102}, {250, 256}, {1000, 1024},
		{1500, 1536}, {256000, 262144}, {300000, 262144},
	} {
		if got := MilliCPUToShares(tt.milli); got != tt.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.want)
		}
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	for _, tt := range []struct{ milli, period, want int64 }{
		{0, 100000, 0}, {5, 100000, 1000}, {9, 100000, 1000}, {10, 100000, 1000}, {11, 100000, 1100},
		{200, 100000, 20000}, {1000, 100000, 100000}, {1500, 100000, 150000}, {1500, 50000, 75000},
	} {
		if got := MilliCPUToQuota(tt.milli, tt.period); got != tt.want {
			t.Errorf("MilliCPUToQuota(%d, %d) = %d, want %d", tt.milli, tt.period, got, tt.want)
		}
	}
}

func assertResources(t *testing.T, got *runtimeapi.LinuxContainerResources, shares, quota, mem int64) {
	t.Helper()
	if got.CpuShares != shares || got.CpuQuota != quota || got.CpuPeriod != CPUPeriod || got.MemoryLimitInBytes != mem {
		t.Fatalf("resources = shares %d quota %d period %d memory %d, want shares %d quota %d period %d memory %d",
			got.CpuShares, got.CpuQuota, got.CpuPeriod, got.MemoryLimitInBytes, shares, quota, CPUPeriod, mem)
	}
	if got.OomScoreAdj != 0 || len(got.HugepageLimits) != 0 || len(got.Unified) != 0 || got.CpusetCpus != "" {
		t.Fatalf("unexpected extra resource fields set: %v", got)
	}
}

func TestContainerResources(t *testing.T) {
	tests := []struct {
		name               string
		c                  v1.Container
		shares, quota, mem int64
	}{
		{"nothing set", ctr("a", nil, nil), 2, 0, 0},
		{"cpu request only", ctr("a", rl("cpu", "250m"), nil), 256, 0, 0},
		{"cpu limit only: shares from limit", ctr("a", nil, rl("cpu", "500m")), 512, 50000, 0},
		{"request and limit", ctr("a", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "2", "memory", "128Mi")), 102, 200000, 128 << 20},
		{"tiny limit gets min quota", ctr("a", rl("cpu", "1m"), rl("cpu", "1m")), 2, 1000, 0},
		{"zero cpu request is kept", ctr("a", rl("cpu", "0"), rl("cpu", "1")), 2, 100000, 0},
		{"memory limit only", ctr("a", nil, rl("memory", "1G")), 2, 0, 1000000000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := podWith([]v1.Container{tt.c})
			assertResources(t, ContainerResources(p, &p.Spec.Containers[0]), tt.shares, tt.quota, tt.mem)
		})
	}
	t.Run("pod-level limits fill in", func(t *testing.T) {
		p := podWith([]v1.Container{ctr("a", rl("cpu", "100m"), nil)})
		p.Spec.Resources = &v1.ResourceRequirements{Limits: rl("cpu", "1", "memory", "1Gi")}
		assertResources(t, ContainerResources(p, &p.Spec.Containers[0]), 102, 100000, 1<<30)
	})
}

func TestPodRequestsAndLimits(t *testing.T) {
	p := podWith(
		[]v1.Container{ctr("a", rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "200m")), ctr("b", rl("cpu", "300m"), rl("cpu", "300m"))},
		ctr("init1", rl("cpu", "1", "memory", "50Mi"), rl("cpu", "1")),
		v1.Container{Name: "sidecar", RestartPolicy: &always, Resources: v1.ResourceRequirements{
			Requests: rl("cpu", "50m", "memory", "10Mi"), Limits: rl("cpu", "50m")}},
		ctr("init2", rl("memory", "300Mi"), nil),
	)
	req := PodRequests(p)
	// cpu: apps 400m + sidecar 50m = 450m vs init1 alone 1000m → 1.
	// memory: apps 100Mi + sidecar 10Mi = 110Mi vs init2 + sidecar 310Mi → 310Mi.
	if got := req[v1.ResourceCPU]; got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("requests cpu = %s, want 1", got.String())
	}
	if got := req[v1.ResourceMemory]; got.Cmp(resource.MustParse("310Mi")) != 0 {
		t.Errorf("requests memory = %s, want 310Mi", got.String())
	}
	lim := PodLimits(p)
	if got := lim[v1.ResourceCPU]; got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("limits cpu = %s, want 1", got.String())
	}
	p.Spec.InitContainers[0].Resources = v1.ResourceRequirements{}
	lim = PodLimits(p)
	// 200m + 300m + sidecar 50m.
	if got := lim[v1.ResourceCPU]; got.Cmp(resource.MustParse("550m")) != 0 {
		t.Errorf("limits cpu without init1 = %s, want 550m", got.String())
	}
	assertResources(t, SandboxResources(p), 450*1024/1000, 55000, 0)
}

func TestOverheadResources(t *testing.T) {
	p := podWith([]v1.Container{ctr("a", nil, nil)})
	if got := OverheadResources(p); got.CpuShares != 0 || got.CpuPeriod != 0 || got.MemoryLimitInBytes != 0 {
		t.Fatalf("no overhead: got %v, want empty", got)
	}
	p.Spec.Overhead = rl("cpu", "250m", "memory", "120Mi")
	assertResources(t, OverheadResources(p), 256, 25000, 120<<20)
}

func TestOOMScoreAdj(t *testing.T) {
	const capacity = 10 << 30 // 10 GiB
	prio := int32(2000001000)
	tests := []struct {
		name string
		pod  *v1.Pod
		c    string
		want int64
	}{
		{"guaranteed", podWith([]v1.Container{ctr("a", nil, rl("cpu", "1", "memory", "1Gi"))}), "a", -997},
		{"besteffort", podWith([]v1.Container{ctr("a", nil, nil)}), "a", 1000},
		{"burstable 10% of memory", podWith([]v1.Container{ctr("a", rl("memory", "1Gi"), nil)}), "a", 900},
		{"burstable no memory request", podWith([]v1.Container{ctr("a", rl("cpu", "1"), nil)}), "a", 999},
		{"burstable tiny request stays below besteffort", podWith([]v1.Container{ctr("a", rl("memory", "1Ki"), nil)}), "a", 999},
		{"burstable request over capacity clamps to 3", podWith([]v1.Container{ctr("a", rl("memory", "20Gi"), nil)}), "a", 3},
		{"burstable limit-only memory defaults request", podWith([]v1.Container{ctr("a", rl("cpu", "1"), rl("memory", "5Gi"))}), "a", 500},
		{"besteffort container in burstable pod", podWith([]v1.Container{ctr("a", rl("memory", "1Gi"), nil), ctr("b", nil, nil)}), "b", 999},
		{"sidecar no worse than smallest app container", podWith(
			[]v1.Container{ctr("a", rl("memory", "2Gi"), nil), ctr("b", rl("memory", "4Gi"), nil)},
			v1.Container{Name: "side", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: rl("memory", "1Mi")}}), "side", 800},
		{"static node-critical pod", func() *v1.Pod {
			p := podWith([]v1.Container{ctr("a", nil, nil)})
			p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
			p.Spec.PriorityClassName = "system-node-critical"
			return p
		}(), "a", -997},
		{"high-priority node-critical pod", func() *v1.Pod {
			p := podWith([]v1.Container{ctr("a", rl("memory", "1Gi"), nil)})
			p.Spec.PriorityClassName = "system-node-critical"
			p.Spec.Priority = &prio
			return p
		}(), "a", -997},
		{"node-critical class from the api without priority is not critical", func() *v1.Pod {
			p := podWith([]v1.Container{ctr("a", nil, nil)})
			p.Annotations = map[string]string{"kubernetes.io/config.source": "api"}
			p.Spec.PriorityClassName = "system-node-critical"
			return p
		}(), "a", 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *v1.Container
			for i := range tt.pod.Spec.Containers {
				if tt.pod.Spec.Containers[i].Name == tt.c {
					c = &tt.pod.Spec.Containers[i]
				}
			}
			for i := range tt.pod.Spec.InitContainers {
				if tt.pod.Spec.InitContainers[i].Name == tt.c {
					c = &tt.pod.Spec.InitContainers[i]
				}
			}
			if got := OOMScoreAdj(tt.pod, c, capacity); got != tt.want {
				t.Fatalf("OOMScoreAdj = %d, want %d", got, tt.want)
			}
		})
	}
}
