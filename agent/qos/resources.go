package qos

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CPU share and CFS quota constants, the kubelet's (cm/helpers_linux.go).
const (
	// MinShares is the smallest cpu.shares the kernel accepts, given to
	// containers without a CPU request.
	MinShares = 2
	// MaxShares is the largest cpu.shares the kernel accepts.
	MaxShares = 262144
	// SharesPerCPU is cpu.shares for one whole CPU.
	SharesPerCPU = 1024
	// CPUPeriod is the CFS period in microseconds (100 ms).
	CPUPeriod = 100000
	// MinQuota is the smallest CFS quota (1 ms) the kubelet sets.
	MinQuota = 1000
)

// MilliCPUToShares converts a CPU amount in millicores to cpu.shares:
// 1024 per CPU, never below MinShares (also for 0) nor above MaxShares.
func MilliCPUToShares(milliCPU int64) int64 {
	if milliCPU == 0 {
		return MinShares
	}
	shares := milliCPU * SharesPerCPU / 1000
	switch {
	case shares < MinShares:
		return MinShares
	case shares > MaxShares:
		return MaxShares
	}
	return shares
}

// MilliCPUToQuota converts a CPU limit in millicores to a CFS quota for the
// given period (microseconds): 0 (no quota) for no limit, never below MinQuota.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	quota := milliCPU * period / 1000
	if quota < MinQuota {
		return MinQuota
	}
	return quota
}

// LinuxResources builds CRI Linux resources the way the kubelet does for a
// container or a sandbox: CPU shares from the CPU request (nil request: from
// the CPU limit, as the API server's defaulting would have set it, and
// MinShares without either), a CFS quota from the CPU limit over CPUPeriod,
// and the memory limit in bytes (0 = unlimited). nil quantities mean unset.
func LinuxResources(cpuRequest, cpuLimit, memoryLimit *resource.Quantity) *runtimeapi.LinuxContainerResources {
	cpuLimit = quantityOrZero(cpuLimit)
	memoryLimit = quantityOrZero(memoryLimit)
	shareBase := cpuLimit
	if cpuRequest != nil {
		shareBase = cpuRequest
	}
	return &runtimeapi.LinuxContainerResources{
		CpuShares:          MilliCPUToShares(shareBase.MilliValue()),
		CpuQuota:           MilliCPUToQuota(cpuLimit.MilliValue(), CPUPeriod),
		CpuPeriod:          CPUPeriod,
		MemoryLimitInBytes: memoryLimit.Value(),
	}
}

// ContainerResources returns the CRI Linux resources of one container: shares
// from its CPU request, quota from its CPU limit, its memory limit. Where
// pod-level resources are set and the container has no CPU (memory) limit of
// its own, the pod's limit applies, as upstream does.
func ContainerResources(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerResources {
	var cpuRequest *resource.Quantity
	if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
		cpuRequest = &q
	}
	cpuLimit := c.Resources.Limits.Cpu()
	memLimit := c.Resources.Limits.Memory()
	if pod.Spec.Resources != nil {
		if cpuLimit.IsZero() {
			cpuLimit = pod.Spec.Resources.Limits.Cpu()
		}
		if memLimit.IsZero() {
			memLimit = pod.Spec.Resources.Limits.Memory()
		}
	}
	return LinuxResources(cpuRequest, cpuLimit, memLimit)
}

// SandboxResources returns the CRI Linux resources of the whole pod (the
// sandbox's LinuxPodSandboxConfig.Resources): the pod's effective requests
// and limits without overhead.
func SandboxResources(pod *v1.Pod) *runtimeapi.LinuxContainerResources {
	req := PodRequests(pod)
	lim := PodLimits(pod)
	var cpuRequest *resource.Quantity
	if q, ok := req[v1.ResourceCPU]; ok {
		cpuRequest = &q
	}
	return LinuxResources(cpuRequest, lim.Cpu(), lim.Memory())
}

// OverheadResources returns the CRI Linux resources of the pod's overhead
// (spec.overhead, set from its RuntimeClass), treated as requests equal to
// limits; an empty value when the pod has none.
func OverheadResources(pod *v1.Pod) *runtimeapi.LinuxContainerResources {
	if pod.Spec.Overhead == nil {
		return &runtimeapi.LinuxContainerResources{}
	}
	cpu := pod.Spec.Overhead.Cpu()
	return LinuxResources(cpu, cpu, pod.Spec.Overhead.Memory())
}

// PodRequests returns the pod's effective requests, as the scheduler and the
// kubelet compute them (overhead excluded): the sum over app containers and
// restartable (sidecar) init containers, or — if larger, per resource — the
// peak while any one init container runs beside the sidecars started before
// it. Pod-level requests, when set, win for the resources they name.
func PodRequests(pod *v1.Pod) v1.ResourceList {
	return aggregate(pod, func(r v1.ResourceRequirements) v1.ResourceList { return r.Requests }, podLevel(pod, true))
}

// PodLimits returns the pod's effective limits, aggregated as PodRequests
// does for requests. Pod-level limits, when set, win for the resources they name.
func PodLimits(pod *v1.Pod) v1.ResourceList {
	return aggregate(pod, func(r v1.ResourceRequirements) v1.ResourceList { return r.Limits }, podLevel(pod, false))
}

func podLevel(pod *v1.Pod, requests bool) v1.ResourceList {
	if pod.Spec.Resources == nil {
		return nil
	}
	if requests {
		return effectiveRequests(*pod.Spec.Resources)
	}
	return pod.Spec.Resources.Limits
}

func aggregate(pod *v1.Pod, pick func(v1.ResourceRequirements) v1.ResourceList, override v1.ResourceList) v1.ResourceList {
	sum := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		addList(sum, pick(pod.Spec.Containers[i].Resources))
	}
	sidecars := v1.ResourceList{}
	initPeak := v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		own := pick(c.Resources)
		var during v1.ResourceList
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			addList(sum, own)
			addList(sidecars, own)
			during = sidecars
		} else {
			during = v1.ResourceList{}
			addList(during, own)
			addList(during, sidecars)
		}
		maxList(initPeak, during)
	}
	maxList(sum, initPeak)
	for name, q := range override {
		sum[name] = q.DeepCopy()
	}
	return sum
}

func addList(sum, add v1.ResourceList) {
	for name, q := range add {
		total := q.DeepCopy()
		if prev, ok := sum[name]; ok {
			total.Add(prev)
		}
		sum[name] = total
	}
}

func maxList(dst, other v1.ResourceList) {
	for name, q := range other {
		if prev, ok := dst[name]; !ok || q.Cmp(prev) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}
