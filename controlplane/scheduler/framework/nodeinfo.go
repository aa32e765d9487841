package framework

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// HostPort is a host port a pod uses on its node.
type HostPort struct {
	IP       string // "0.0.0.0" when unset
	Protocol v1.Protocol
	Port     int32
}

// Conflicts reports whether two host ports collide: same protocol and port,
// and the same IP or either on every address.
func (p HostPort) Conflicts(o HostPort) bool {
	return p.Port == o.Port && p.Protocol == o.Protocol && (p.IP == o.IP || p.IP == "0.0.0.0" || o.IP == "0.0.0.0")
}

// PodHostPorts lists the host ports of the pod's containers (and
// restartable init containers), defaulted as upstream does.
func PodHostPorts(pod *v1.Pod) []HostPort {
	var out []HostPort
	add := func(cs []v1.Container) {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort <= 0 {
					continue
				}
				hp := HostPort{IP: p.HostIP, Protocol: p.Protocol, Port: p.HostPort}
				if hp.IP == "" {
					hp.IP = "0.0.0.0"
				}
				if hp.Protocol == "" {
					hp.Protocol = v1.ProtocolTCP
				}
				out = append(out, hp)
			}
		}
	}
	add(pod.Spec.Containers)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add([]v1.Container{*c})
		}
	}
	return out
}

// ImageStateSummary is what the snapshot knows of an image on a node.
type ImageStateSummary struct {
	Size int64
	// NumNodes is how many nodes have the image.
	NumNodes int
}

// NodeInfo is a node with the pods on it and what they use.
type NodeInfo struct {
	// Node is nil while pods reference a node the cache has not seen.
	Node *v1.Node
	Pods []*PodInfo
	// PodsWithAffinity have any pod (anti-)affinity term;
	// PodsWithRequiredAntiAffinity a required anti-affinity term.
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	UsedPorts                    []HostPort
	// Requested sums the pods' requests; NonZeroRequested their non-zero
	// requests (for scoring).
	Requested        Resource
	NonZeroRequested Resource
	Allocatable      Resource
	// ImageStates by normalized image name; filled by the snapshot.
	ImageStates map[string]*ImageStateSummary
	// Generation increases on every change.
	Generation int64
}

// NewNodeInfo returns an empty NodeInfo for node.
func NewNodeInfo(node *v1.Node) *NodeInfo {
	n := &NodeInfo{}
	n.SetNode(node)
	return n
}

// Name returns the node's name ("" without a node).
func (n *NodeInfo) Name() string {
	if n.Node == nil {
		return ""
	}
	return n.Node.Name
}

// SetNode sets the node object and its allocatable.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.Node = node
	if node != nil {
		n.Allocatable = NewResource(node.Status.Allocatable)
	} else {
		n.Allocatable = Resource{}
	}
}

// AddPod accounts a pod on the node.
func (n *NodeInfo) AddPod(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if pi.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.Requested.Plus(pi.Requests)
	n.NonZeroRequested.Plus(pi.NonZeroRequests)
	n.UsedPorts = append(n.UsedPorts, PodHostPorts(pi.Pod)...)
}

// RemovePod removes the pod with uid; it reports whether it was there.
func (n *NodeInfo) RemovePod(uid types.UID) bool {
	idx := -1
	for i, p := range n.Pods {
		if p.Pod.UID == uid {
			idx = i
			break
		}
	}
	if idx < 0 {
		return false
	}
	pi := n.Pods[idx]
	n.Pods = append(n.Pods[:idx:idx], n.Pods[idx+1:]...)
	n.PodsWithAffinity = removeByUID(n.PodsWithAffinity, uid)
	n.PodsWithRequiredAntiAffinity = removeByUID(n.PodsWithRequiredAntiAffinity, uid)
	n.Requested.Minus(pi.Requests)
	n.NonZeroRequested.Minus(pi.NonZeroRequests)
	n.UsedPorts = n.UsedPorts[:0:0]
	for _, p := range n.Pods {
		n.UsedPorts = append(n.UsedPorts, PodHostPorts(p.Pod)...)
	}
	return true
}

func removeByUID(ps []*PodInfo, uid types.UID) []*PodInfo {
	for i, p := range ps {
		if p.Pod.UID == uid {
			return append(ps[:i:i], ps[i+1:]...)
		}
	}
	return ps
}

// Clone copies the NodeInfo so the copy can be read while the original
// changes (pods are shared, they are immutable).
func (n *NodeInfo) Clone() *NodeInfo {
	return &NodeInfo{
		Node:                         n.Node,
		Pods:                         append([]*PodInfo(nil), n.Pods...),
		PodsWithAffinity:             append([]*PodInfo(nil), n.PodsWithAffinity...),
		PodsWithRequiredAntiAffinity: append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...),
		UsedPorts:                    append([]HostPort(nil), n.UsedPorts...),
		Requested:                    n.Requested.Clone(),
		NonZeroRequested:             n.NonZeroRequested.Clone(),
		Allocatable:                  n.Allocatable.Clone(),
		ImageStates:                  n.ImageStates,
		Generation:                   n.Generation,
	}
}
