package pod

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass computes a pod's quality of service class as upstream does:
// BestEffort when no container has CPU or memory requests or limits,
// Guaranteed when every container has equal CPU and memory limits and
// requests, Burstable otherwise. Init containers count; pod-level resources,
// when set, decide instead.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Limits) > 0 || len(pod.Spec.Resources.Requests) > 0) {
		return classify([]v1.ResourceRequirements{*pod.Spec.Resources})
	}
	var rs []v1.ResourceRequirements
	for _, c := range pod.Spec.InitContainers {
		rs = append(rs, c.Resources)
	}
	for _, c := range pod.Spec.Containers {
		rs = append(rs, c.Resources)
	}
	return classify(rs)
}

func classify(rs []v1.ResourceRequirements) v1.PodQOSClass {
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	isGuaranteed := true
	for _, r := range rs {
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := r.Requests[name]; ok && q.Sign() > 0 {
				add(requests, name, q)
			}
		}
		seen := 0
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := r.Limits[name]; ok && q.Sign() > 0 {
				add(limits, name, q)
				seen++
			}
		}
		if seen != 2 {
			isGuaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if isGuaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				isGuaranteed = false
				break
			}
		}
	}
	if isGuaranteed && len(requests) == len(limits) {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

func add(list v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
	if cur, ok := list[name]; ok {
		cur.Add(q)
		list[name] = cur
		return
	}
	list[name] = q.DeepCopy()
}
