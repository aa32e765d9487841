package qos

import (
	v1 "k8s.io/api/core/v1"

	"berth/agent/source"
)

// OOM score adjustments the kubelet gives containers.
const (
	// GuaranteedOOMScoreAdj is for containers of Guaranteed and node-critical pods.
	GuaranteedOOMScoreAdj = -997
	// BestEffortOOMScoreAdj is for containers of BestEffort pods.
	BestEffortOOMScoreAdj = 1000
	// minBurstableOOMScoreAdj keeps Burstable containers above a Guaranteed
	// container using all of the node's memory.
	minBurstableOOMScoreAdj = 1000 + GuaranteedOOMScoreAdj
)

// Node-critical pods: the priority class and the priority threshold of the
// system's critical classes, and the annotation marking where a pod came from.
const (
	systemNodeCritical     = "system-node-critical"
	systemCriticalPriority = 2 * 1000000000
	configSourceAPIServer  = "api"
)

// IsNodeCritical reports whether the pod is node-critical as the kubelet
// decides it: priority class system-node-critical on a critical pod (a static
// or mirror pod, or one whose priority is at least the system-critical
// threshold).
func IsNodeCritical(pod *v1.Pod) bool {
	if pod.Spec.PriorityClassName != systemNodeCritical {
		return false
	}
	if src, ok := pod.Annotations[source.AnnotationConfigSource]; ok && src != configSourceAPIServer {
		return true
	}
	if _, ok := pod.Annotations[source.AnnotationMirror]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}

// OOMScoreAdj returns the oom_score_adj the kubelet gives container c of pod
// on a node with memoryCapacity bytes of memory: GuaranteedOOMScoreAdj (-997)
// for node-critical and Guaranteed pods, BestEffortOOMScoreAdj (1000) for
// BestEffort pods, and for Burstable pods 1000 - 1000*memoryRequest/capacity,
// clamped to [3, 999], the request defaulted from the limit (a sidecar init container gets no more than the
// smallest-requesting app container, so it is not killed before them).
// memoryCapacity must be positive for Burstable pods; a non-positive value
// is treated as 1 byte (every request then fills the node).
func OOMScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int64 {
	if IsNodeCritical(pod) {
		return GuaranteedOOMScoreAdj
	}
	switch Class(pod) {
	case v1.PodQOSGuaranteed:
		return GuaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return BestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		memoryCapacity = 1
	}
	request := memoryRequest(c)
	adj := 1000 - 1000*request/memoryCapacity
	if isSidecar(pod, c) {
		if minAdj := 1000 - 1000*minAppMemoryRequest(pod)/memoryCapacity; adj > minAdj {
			adj = minAdj
		}
	}
	switch {
	case adj < minBurstableOOMScoreAdj:
		return minBurstableOOMScoreAdj
	case adj == BestEffortOOMScoreAdj:
		return BestEffortOOMScoreAdj - 1
	}
	return adj
}

// isSidecar reports whether c is one of the pod's restartable init containers.
func isSidecar(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.Name == c.Name {
			return ic.RestartPolicy != nil && *ic.RestartPolicy == v1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// minAppMemoryRequest is the smallest memory request among the pod's app
// containers (0 when there are none).
func minAppMemoryRequest(pod *v1.Pod) int64 {
	var lowest int64 = -1
	for i := range pod.Spec.Containers {
		r := memoryRequest(&pod.Spec.Containers[i])
		if lowest < 0 || r < lowest {
			lowest = r
		}
	}
	if lowest < 0 {
		return 0
	}
	return lowest
}

// memoryRequest is c's memory request in bytes, defaulted from its limit as
// the API server does.
func memoryRequest(c *v1.Container) int64 {
	req := effectiveRequests(c.Resources)
	return req.Memory().Value()
}
