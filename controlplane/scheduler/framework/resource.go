package framework

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Defaults the scoring plugins assume for containers that request no cpu or
// memory (upstream's non-zero requests), so empty pods do not all pile onto
// one node.
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
)

// Resource is an amount of the schedulable resources.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is the node's pod capacity (allocatable "pods").
	AllowedPodNumber int64
	// Scalar holds extended resources and hugepages, in their base units.
	Scalar map[v1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl v1.ResourceList) Resource {
	var r Resource
	r.Add(rl)
	return r
}

// Add adds a ResourceList to r.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			if IsScalarResourceName(name) {
				if r.Scalar == nil {
					r.Scalar = map[v1.ResourceName]int64{}
				}
				r.Scalar[name] += q.Value()
			}
		}
	}
}

// Plus adds o to r.
func (r *Resource) Plus(o Resource) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	r.AllowedPodNumber += o.AllowedPodNumber
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[k] += v
	}
}

// Minus subtracts o from r.
func (r *Resource) Minus(o Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.AllowedPodNumber -= o.AllowedPodNumber
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[k] -= v
	}
}

// Clone deep-copies r.
func (r Resource) Clone() Resource {
	c := r
	if r.Scalar != nil {
		c.Scalar = make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			c.Scalar[k] = v
		}
	}
	return c
}

// IsZero reports whether nothing is requested.
func (r Resource) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.EphemeralStorage != 0 {
		return false
	}
	for _, v := range r.Scalar {
		if v != 0 {
			return false
		}
	}
	return true
}

// IsScalarResourceName reports whether name is an extended resource,
// hugepages or an attachable-volume count (the scalar resources the
// scheduler tracks).
func IsScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	if len(s) >= len(v1.ResourceHugePagesPrefix) && s[:len(v1.ResourceHugePagesPrefix)] == v1.ResourceHugePagesPrefix {
		return true
	}
	if len(s) >= len(v1.ResourceAttachableVolumesPrefix) && s[:len(v1.ResourceAttachableVolumesPrefix)] == v1.ResourceAttachableVolumesPrefix {
		return true
	}
	// Extended resources are domain-prefixed names outside kubernetes.io.
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return !isNativeDomain(s[:i])
		}
	}
	return false
}

func isNativeDomain(domain string) bool {
	return domain == "kubernetes.io" || len(domain) > len(".kubernetes.io") && domain[len(domain)-len(".kubernetes.io"):] == ".kubernetes.io"
}

// PodRequests computes the pod's effective requests as upstream does: the
// larger of the app containers' sum and each init container (restartable
// init containers — sidecars — add to everything after them), plus the pod
// overhead, or the pod-level resources when set.
func PodRequests(pod *v1.Pod) Resource {
	return NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
}

var nonZeroDefaults = v1.ResourceList{
	v1.ResourceCPU:    *resourceQuantityMilli(DefaultMilliCPURequest),
	v1.ResourceMemory: *resourceQuantity(DefaultMemoryRequest),
}

// PodNonZeroRequests is PodRequests with DefaultMilliCPURequest and
// DefaultMemoryRequest standing in for containers that request no cpu or
// memory; the scoring plugins use it.
func PodNonZeroRequests(pod *v1.Pod) Resource {
	return NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: nonZeroDefaults}))
}
