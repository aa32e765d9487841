// Package noderesources holds the NodeResourcesFit filter and
// least-allocated score, and the NodeResourcesBalancedAllocation score.
package noderesources

import (
	"math"
	"sort"

	v1 "k8s.io/api/core/v1"

	fw "berth/controlplane/scheduler/framework"
)

// Names of the plugins.
const (
	FitName                = "NodeResourcesFit"
	BalancedAllocationName = "NodeResourcesBalancedAllocation"
)

// ErrReasonTooManyPods is the reason for a node at its pod capacity.
const ErrReasonTooManyPods = "Too many pods"

// ResourceWeight is a resource the scores consider with its weight.
type ResourceWeight struct {
	Name   v1.ResourceName
	Weight int64
}

// DefaultResources are upstream's default scoring resources: cpu and
// memory, weight 1 each.
var DefaultResources = []ResourceWeight{{v1.ResourceCPU, 1}, {v1.ResourceMemory, 1}}

// Fit is the NodeResourcesFit filter and its LeastAllocated score.
type Fit struct{}

// NewFit returns the plugin.
func NewFit() *Fit { return &Fit{} }

// Name returns FitName.
func (*Fit) Name() string { return FitName }

// InsufficientResource is a resource a node lacks for a pod: what the pod
// requests, what the node's pods already request and its allocatable.
type InsufficientResource struct {
	ResourceName v1.ResourceName
	// Reason is the filter's reason ("Too many pods", "Insufficient cpu").
	Reason    string
	Requested int64
	Used      int64
	Capacity  int64
}

// Insufficient lists the resources node lacks for a pod requesting req, as
// upstream's fitsRequest: the pod count first, then cpu, memory,
// ephemeral-storage and each scalar resource by name.
func Insufficient(req fw.Resource, node *fw.NodeInfo) []InsufficientResource {
	var out []InsufficientResource
	if int64(len(node.Pods))+1 > node.Allocatable.AllowedPodNumber {
		out = append(out, InsufficientResource{v1.ResourcePods, ErrReasonTooManyPods, 1, int64(len(node.Pods)), node.Allocatable.AllowedPodNumber})
	}
	if req.IsZero() {
		return out
	}
	alloc, used := &node.Allocatable, &node.Requested
	check := func(name v1.ResourceName, want, allocatable, requested int64) {
		if want > 0 && want > allocatable-requested {
			out = append(out, InsufficientResource{name, "Insufficient " + string(name), want, requested, allocatable})
		}
	}
	check(v1.ResourceCPU, req.MilliCPU, alloc.MilliCPU, used.MilliCPU)
	check(v1.ResourceMemory, req.Memory, alloc.Memory, used.Memory)
	check(v1.ResourceEphemeralStorage, req.EphemeralStorage, alloc.EphemeralStorage, used.EphemeralStorage)
	names := make([]string, 0, len(req.Scalar))
	for n := range req.Scalar {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		name := v1.ResourceName(n)
		check(name, req.Scalar[name], alloc.Scalar[name], used.Scalar[name])
	}
	return out
}

// InsufficientReasons lists the reasons of Insufficient(req, node).
func InsufficientReasons(req fw.Resource, node *fw.NodeInfo) []string {
	var reasons []string
	for _, r := range Insufficient(req, node) {
		reasons = append(reasons, r.Reason)
	}
	return reasons
}

// Filter rejects a node without room for the pod's requests or one more pod.
func (*Fit) Filter(_ *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) *fw.Status {
	if reasons := InsufficientReasons(pod.Requests, node); len(reasons) > 0 {
		return fw.NewStatus(fw.Unschedulable, reasons...)
	}
	return nil
}

// requestedAndAllocatable returns, for scoring, what the node would have
// requested with the pod (non-zero requests) and its allocatable.
func requestedAndAllocatable(pod *fw.PodInfo, node *fw.NodeInfo, name v1.ResourceName) (requested, allocatable int64) {
	switch name {
	case v1.ResourceCPU:
		return node.NonZeroRequested.MilliCPU + pod.NonZeroRequests.MilliCPU, node.Allocatable.MilliCPU
	case v1.ResourceMemory:
		return node.NonZeroRequested.Memory + pod.NonZeroRequests.Memory, node.Allocatable.Memory
	case v1.ResourceEphemeralStorage:
		return node.Requested.EphemeralStorage + pod.Requests.EphemeralStorage, node.Allocatable.EphemeralStorage
	}
	if pod.Requests.Scalar[name] == 0 {
		return 0, 0
	}
	return node.Requested.Scalar[name] + pod.Requests.Scalar[name], node.Allocatable.Scalar[name]
}

// LeastAllocatedScore is the weighted mean over resources of the free share
// left after placing the pod: (allocatable-requested)*100/allocatable.
func LeastAllocatedScore(pod *fw.PodInfo, node *fw.NodeInfo, resources []ResourceWeight) int64 {
	var score, weights int64
	for _, r := range resources {
		req, alloc := requestedAndAllocatable(pod, node, r.Name)
		if alloc == 0 {
			continue
		}
		weights += r.Weight
		if req > alloc {
			continue
		}
		score += (alloc - req) * fw.MaxNodeScore / alloc * r.Weight
	}
	if weights == 0 {
		return 0
	}
	return score / weights
}

// Score is the least-allocated score with DefaultResources.
func (*Fit) Score(_ *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) (int64, *fw.Status) {
	return LeastAllocatedScore(pod, node, DefaultResources), nil
}

// BalancedAllocation scores nodes whose resource usage fractions would be
// closest to each other after placing the pod.
type BalancedAllocation struct{}

// NewBalancedAllocation returns the plugin.
func NewBalancedAllocation() *BalancedAllocation { return &BalancedAllocation{} }

// Name returns BalancedAllocationName.
func (*BalancedAllocation) Name() string { return BalancedAllocationName }

// BalancedAllocationScore is (1 - standard deviation of the requested
// fractions, each capped at 1) * 100.
func BalancedAllocationScore(pod *fw.PodInfo, node *fw.NodeInfo, resources []ResourceWeight) int64 {
	fractions := make([]float64, 0, len(resources))
	var sum float64
	for _, r := range resources {
		req, alloc := requestedAndAllocatable(pod, node, r.Name)
		if alloc == 0 {
			continue
		}
		f := float64(req) / float64(alloc)
		if f > 1 {
			f = 1
		}
		fractions = append(fractions, f)
		sum += f
	}
	var std float64
	switch len(fractions) {
	case 0, 1:
	case 2:
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	default:
		mean := sum / float64(len(fractions))
		var v float64
		for _, f := range fractions {
			v += (f - mean) * (f - mean)
		}
		std = math.Sqrt(v / float64(len(fractions)))
	}
	return int64((1 - std) * float64(fw.MaxNodeScore))
}

// Score is the balanced-allocation score with DefaultResources.
func (*BalancedAllocation) Score(_ *fw.CycleState, pod *fw.PodInfo, node *fw.NodeInfo) (int64, *fw.Status) {
	return BalancedAllocationScore(pod, node, DefaultResources), nil
}
