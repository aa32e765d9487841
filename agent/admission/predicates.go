// Package admission is the node's admission of a pod by the scheduler's
// general predicates, as the kubelet's predicate admit handler
// (pkg/kubelet/lifecycle/predicate.go): a pod bound to the node — by the
// scheduler, or by its spec.nodeName directly — must still fit it, given
// the pods the node already runs: the kubernetes.io/os label and the pod's
// OS, the supplemental groups policy, the resources (pod count, cpu,
// memory, ephemeral-storage, extended resources), node affinity and
// selector, node name, host ports, and the node's NoExecute taints.
// Reasons and messages are upstream's, word for word (NodePorts,
// OutOfcpu, …).
package admission

import (
	"fmt"
	"runtime"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/go-logr/logr"

	"berth/agent/source"
	fw "berth/controlplane/scheduler/framework"
	affinityplugin "berth/controlplane/scheduler/plugins/nodeaffinity"
	"berth/controlplane/scheduler/plugins/nodename"
	"berth/controlplane/scheduler/plugins/nodeports"
	"berth/controlplane/scheduler/plugins/noderesources"
	"berth/controlplane/scheduler/plugins/tainttoleration"
)

// Reasons of rejections that are not a predicate's name, as upstream's.
const (
	ReasonInvalidNodeInfo                      = "InvalidNodeInfo"
	ReasonPodOSSelectorNodeLabelDoesNotMatch   = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonPodOSNotSupported                    = "PodOSNotSupported"
	ReasonSupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"
	// ReasonInsufficientPrefix prefixes the resource's name in the reason
	// of a pod the node has no room for (OutOfcpu, OutOfpods, …).
	ReasonInsufficientPrefix = "OutOf"
)

// taintNotMatch is the TaintToleration predicate's description.
const taintNotMatch = "node(s) had taints that the pod didn't tolerate"

// Predicates admits pods by the general predicates against the Node that
// node returns (the agent's informer copy, or the Node it would register).
type Predicates struct {
	node func() (*v1.Node, error)
}

// New returns the predicates on the Node node returns.
func New(node func() (*v1.Node, error)) *Predicates { return &Predicates{node: node} }

// Admit reports whether pod may run on the node beside others, the pods the
// node has admitted and not finished (pod itself excluded). A rejection
// carries the reason and message the pod is Failed with (after "Pod was
// rejected: "): the first predicate that fails.
func (p *Predicates) Admit(pod *v1.Pod, others []*v1.Pod) (reason, message string, ok bool) {
	node, err := p.node()
	if err != nil || node == nil {
		return ReasonInvalidNodeInfo, "Kubelet cannot get node info.", false
	}
	// The checks preemption could not help come first.
	if osSelectorMismatch(pod) {
		return ReasonPodOSSelectorNodeLabelDoesNotMatch, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label", false
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != runtime.GOOS {
		return ReasonPodOSNotSupported, "Failed to admit pod as the OS field doesn't match node OS", false
	}
	if strictGroupsUnsupported(pod, node) {
		return ReasonSupplementalGroupsPolicyNotSupported, fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict), false
	}
	info := fw.NewNodeInfo(node)
	for _, o := range others {
		if o.UID == pod.UID {
			continue
		}
		info.AddPod(&fw.PodInfo{Pod: o, Requests: fw.PodRequests(o)})
	}
	if r := insufficient(pod, info); r != nil {
		return ReasonInsufficientPrefix + string(r.ResourceName), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			r.ResourceName, r.Requested, r.Used, r.Capacity), false
	}
	if name, desc := firstFailure(pod, info); name != "" {
		return name, fmt.Sprintf("Predicate %s failed: %s", name, desc), false
	}
	return "", "", true
}

// insufficient is the first resource the node lacks for pod; requests of
// extended resources the node does not advertise are left out, as
// upstream's (cluster-level or DRA-backed resources the node cannot know).
func insufficient(pod *v1.Pod, info *fw.NodeInfo) *noderesources.InsufficientResource {
	req := fw.PodRequests(pod)
	for name := range req.Scalar {
		if _, advertised := info.Allocatable.Scalar[name]; !advertised && isExtended(name) {
			delete(req.Scalar, name)
		}
	}
	if rs := noderesources.Insufficient(req, info); len(rs) > 0 {
		return &rs[0]
	}
	return nil
}

// isExtended reports whether name is an extended resource (not hugepages
// or an attachable-volume count, which nodes always advertise).
func isExtended(name v1.ResourceName) bool {
	s := string(name)
	for _, prefix := range []string{v1.ResourceHugePagesPrefix, v1.ResourceAttachableVolumesPrefix} {
		if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
			return false
		}
	}
	return fw.IsScalarResourceName(name)
}

// firstFailure is the first of the other predicates pod fails on the node,
// in upstream's order: NodeAffinity, NodeName, NodePorts, then the
// NoExecute taints (static pods spared).
func firstFailure(pod *v1.Pod, info *fw.NodeInfo) (name, desc string) {
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(info.Node); !ok {
		return affinityplugin.Name, affinityplugin.ErrReason
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != info.Node.Name {
		return nodename.Name, nodename.ErrReason
	}
	for _, want := range fw.PodHostPorts(pod) {
		for _, used := range info.UsedPorts {
			if want.Conflicts(used) {
				return nodeports.Name, nodeports.ErrReason
			}
		}
	}
	if !source.IsStatic(pod) {
		noExecute := func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }
		if _, untolerated := v1helper.FindMatchingUntoleratedTaint(logr.Discard(), info.Node.Spec.Taints, pod.Spec.Tolerations, noExecute, false); untolerated {
			return tainttoleration.Name, taintNotMatch
		}
	}
	return "", ""
}

// osSelectorMismatch reports whether the pod's kubernetes.io/os label
// names another OS than the node's — this one: a node label saying
// otherwise is wrong, and the status sync corrects it.
func osSelectorMismatch(pod *v1.Pod) bool {
	want, set := pod.Labels[v1.LabelOSStable]
	if !set {
		return false
	}
	return want != runtime.GOOS
}

// strictGroupsUnsupported reports whether the pod asks for the Strict
// supplemental groups policy on a node that does not report supporting it.
func strictGroupsUnsupported(pod *v1.Pod, node *v1.Node) bool {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
		return false
	}
	f := node.Status.Features
	return f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy
}
