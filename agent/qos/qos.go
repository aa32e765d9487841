// Package qos turns a pod's resource requirements into what the node enforces,
// with the kubelet's rules: the pod's QoS class (Guaranteed, Burstable,
// BestEffort), the pod's cgroup parent under the cgroupfs driver, the CRI
// Linux resources of a container or sandbox (CPU shares, CFS quota and period,
// memory limit) and a container's oom_score_adj.
//
// Everything here is a pure function of the pod spec (plus the node's memory
// capacity for the OOM score): no I/O.
package qos

import (
	"path"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// isQoSResource reports whether a resource takes part in the QoS class: only
// CPU and memory do (hugepages, ephemeral storage and extended resources don't).
func isQoSResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory
}

// effectiveRequests is a container's requests as the API server's defaulting
// leaves them: a resource with a limit but no request is requested at its
// limit. Applying it here keeps undefaulted manifests (static pods read from
// disk) in the same class the API server would have given them.
func effectiveRequests(r v1.ResourceRequirements) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range r.Requests {
		out[name] = q
	}
	for name, q := range r.Limits {
		if _, ok := out[name]; !ok {
			out[name] = q
		}
	}
	return out
}

// addPositive adds every positive CPU/memory quantity of list into sum, and
// returns the QoS resources that were positive.
func addPositive(sum v1.ResourceList, list v1.ResourceList) map[v1.ResourceName]bool {
	found := map[v1.ResourceName]bool{}
	for name, q := range list {
		if !isQoSResource(name) || q.Sign() <= 0 {
			continue
		}
		found[name] = true
		total := q.DeepCopy()
		if prev, ok := sum[name]; ok {
			total.Add(prev)
		}
		sum[name] = total
	}
	return found
}

// Class returns the pod's QoS class as upstream computes it:
//   - BestEffort when no container (init containers included) requests or
//     limits CPU or memory;
//   - Guaranteed when every container limits both CPU and memory and, summed
//     over all containers, the requests of each equal its limits;
//   - Burstable otherwise.
//
// Requests left unset where a limit is set count as equal to the limit (the
// API server's defaulting). When pod-level resources (spec.resources) are set
// they decide instead of the containers'.
func Class(pod *v1.Pod) v1.PodQOSClass {
	requests := v1.ResourceList{}
	limits := v1.ResourceList{}
	guaranteed := true

	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		addPositive(requests, effectiveRequests(*pod.Spec.Resources))
		found := addPositive(limits, pod.Spec.Resources.Limits)
		if !found[v1.ResourceCPU] || !found[v1.ResourceMemory] {
			guaranteed = false
		}
	} else {
		all := make([]*v1.Container, 0, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
		for i := range pod.Spec.Containers {
			all = append(all, &pod.Spec.Containers[i])
		}
		for i := range pod.Spec.InitContainers {
			all = append(all, &pod.Spec.InitContainers[i])
		}
		for _, c := range all {
			addPositive(requests, effectiveRequests(c.Resources))
			found := addPositive(limits, c.Resources.Limits)
			if !found[v1.ResourceCPU] || !found[v1.ResourceMemory] {
				guaranteed = false
			}
		}
	}

	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			lim, ok := limits[name]
			if !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

// CgroupParent returns the cgroup (cgroupfs driver) a pod's sandbox and
// containers run under, as the kubelet lays them out with cgroups per QoS:
// <root>/kubepods/pod<uid> for Guaranteed pods,
// <root>/kubepods/burstable/pod<uid> and <root>/kubepods/besteffort/pod<uid>
// for the others. An empty root means "/".
func CgroupParent(cgroupRoot string, pod *v1.Pod) string {
	parts := []string{"/", cgroupRoot, "kubepods"}
	switch Class(pod) {
	case v1.PodQOSBurstable:
		parts = append(parts, "burstable")
	case v1.PodQOSBestEffort:
		parts = append(parts, "besteffort")
	}
	parts = append(parts, "pod"+string(pod.UID))
	return path.Join(parts...)
}

// quantityOrZero returns q, or a zero quantity when q is nil.
func quantityOrZero(q *resource.Quantity) *resource.Quantity {
	if q == nil {
		return &resource.Quantity{}
	}
	return q
}
