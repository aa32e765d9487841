// Package schedtest builds nodes, pods and snapshots for the scheduler's
// tests and benchmarks, and runs plugins the way the scheduling cycle does.
package schedtest

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fw "berth/controlplane/scheduler/framework"
)

// NodeOpt modifies a test node.
type NodeOpt func(*v1.Node)

// Node returns a node with the hostname label and, unless changed,
// allocatable cpu 4, memory 8Gi, pods 110.
func Node(name string, opts ...NodeOpt) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name), Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110"),
		}},
	}
	for _, o := range opts {
		o(n)
	}
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	return n
}

// Labels adds labels (key, value pairs).
func Labels(kv ...string) NodeOpt {
	return func(n *v1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

// Allocatable sets allocatable quantities (name, quantity pairs).
func Allocatable(kv ...string) NodeOpt {
	return func(n *v1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Status.Allocatable[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
	}
}

// Taints adds taints.
func Taints(ts ...v1.Taint) NodeOpt {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, ts...) }
}

// Unschedulable cordons the node.
func Unschedulable() NodeOpt { return func(n *v1.Node) { n.Spec.Unschedulable = true } }

// Image reports an image of size bytes on the node.
func Image(size int64, names ...string) NodeOpt {
	return func(n *v1.Node) {
		n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: names, SizeBytes: size})
	}
}

// PodOpt modifies a test pod.
type PodOpt func(*v1.Pod)

// Pod returns a pod in namespace "default" (UID = name) with one container
// "c" of image "busybox" and no requests.
func Pod(name string, opts ...PodOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: map[string]string{}},
		Spec:       v1.PodSpec{SchedulerName: v1.DefaultSchedulerName, Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Namespace sets the pod's namespace.
func Namespace(ns string) PodOpt { return func(p *v1.Pod) { p.Namespace = ns } }

// Req sets the first container's requests (name, quantity pairs).
func Req(kv ...string) PodOpt {
	return func(p *v1.Pod) {
		rl := v1.ResourceList{}
		for i := 0; i+1 < len(kv); i += 2 {
			rl[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		p.Spec.Containers[0].Resources.Requests = rl
	}
}

// Container appends a container with requests (name, quantity pairs).
func Container(image string, kv ...string) PodOpt {
	return func(p *v1.Pod) {
		rl := v1.ResourceList{}
		for i := 0; i+1 < len(kv); i += 2 {
			rl[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+len(p.Spec.Containers))), Image: image, Resources: v1.ResourceRequirements{Requests: rl}})
	}
}

// PodLabels adds labels (key, value pairs).
func PodLabels(kv ...string) PodOpt {
	return func(p *v1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

// OnNode sets spec.nodeName.
func OnNode(name string) PodOpt { return func(p *v1.Pod) { p.Spec.NodeName = name } }

// NodeSelector sets the node selector (key, value pairs).
func NodeSelector(kv ...string) PodOpt {
	return func(p *v1.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

// Tolerations adds tolerations.
func Tolerations(ts ...v1.Toleration) PodOpt {
	return func(p *v1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, ts...) }
}

// HostPort adds a container port with a host port.
func HostPort(proto v1.Protocol, ip string, port int32) PodOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, HostIP: ip, Protocol: proto})
	}
}

// WithAffinity sets the affinity.
func WithAffinity(a *v1.Affinity) PodOpt { return func(p *v1.Pod) { p.Spec.Affinity = a } }

// Spread adds a topology spread constraint selecting label app=value.
func Spread(key string, maxSkew int32, when v1.UnsatisfiableConstraintAction, app string) PodOpt {
	return func(p *v1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		})
	}
}

// PodInfo derives the PodInfo or fails the test.
func PodInfo(tb testing.TB, pod *v1.Pod) *fw.PodInfo {
	tb.Helper()
	pi, err := fw.NewPodInfo(pod)
	if err != nil {
		tb.Fatalf("NewPodInfo(%s): %v", pod.Name, err)
	}
	return pi
}

// NodeInfo returns a NodeInfo for node with pods on it.
func NodeInfo(tb testing.TB, node *v1.Node, pods ...*v1.Pod) *fw.NodeInfo {
	tb.Helper()
	ni := fw.NewNodeInfo(node)
	for _, p := range pods {
		q := p.DeepCopy()
		q.Spec.NodeName = node.Name
		ni.AddPod(PodInfo(tb, q))
	}
	return ni
}

// Snapshot builds a snapshot of the nodes with pods placed by their
// spec.nodeName.
func Snapshot(tb testing.TB, nodes []*v1.Node, pods ...*v1.Pod) *fw.Snapshot {
	tb.Helper()
	byNode := map[string][]*v1.Pod{}
	for _, p := range pods {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	infos := make([]*fw.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		infos = append(infos, NodeInfo(tb, n, byNode[n.Name]...))
	}
	return fw.NewSnapshot(infos)
}

// FilterResult is a node's outcome of running filters.
type FilterResult struct {
	Code    fw.Code
	Reasons []string
}

// RunFilter runs a plugin's PreFilter (if it has one) and, unless skipped
// or rejected there, its Filter on every node of snap, returning the
// outcome per node name (a PreFilter rejection applies to every node).
func RunFilter(tb testing.TB, p fw.FilterPlugin, pod *v1.Pod, snap *fw.Snapshot) map[string]FilterResult {
	tb.Helper()
	pi := PodInfo(tb, pod)
	state := fw.NewCycleState()
	out := map[string]FilterResult{}
	if pre, ok := p.(fw.PreFilterPlugin); ok {
		st := pre.PreFilter(state, pi, snap)
		switch {
		case st.Code() == fw.Skip:
			for _, n := range snap.Nodes {
				out[n.Name()] = FilterResult{Code: fw.Success}
			}
			return out
		case !st.IsSuccess():
			for _, n := range snap.Nodes {
				out[n.Name()] = FilterResult{Code: st.Code(), Reasons: st.Reasons()}
			}
			return out
		}
	}
	for _, n := range snap.Nodes {
		st := p.Filter(state, pi, n)
		out[n.Name()] = FilterResult{Code: st.Code(), Reasons: st.Reasons()}
	}
	return out
}

// RunScore runs a plugin's PreScore (if any), Score on every node of snap
// (all feasible) and NormalizeScore (if any), returning the scores by node
// name; a skipped plugin scores nothing (nil).
func RunScore(tb testing.TB, p fw.ScorePlugin, pod *v1.Pod, snap *fw.Snapshot) map[string]int64 {
	tb.Helper()
	pi := PodInfo(tb, pod)
	state := fw.NewCycleState()
	if pre, ok := p.(fw.PreScorePlugin); ok {
		st := pre.PreScore(state, pi, snap, snap.Nodes)
		if st.Code() == fw.Skip {
			return nil
		}
		if !st.IsSuccess() {
			tb.Fatalf("%s PreScore: %v", p.Name(), st.Message())
		}
	}
	scores := make([]fw.NodeScore, 0, len(snap.Nodes))
	for _, n := range snap.Nodes {
		s, st := p.Score(state, pi, n)
		if !st.IsSuccess() {
			tb.Fatalf("%s Score(%s): %v", p.Name(), n.Name(), st.Message())
		}
		scores = append(scores, fw.NodeScore{Name: n.Name(), Score: s})
	}
	if norm, ok := p.(fw.ScoreNormalizer); ok {
		if st := norm.NormalizeScore(state, pi, scores); !st.IsSuccess() {
			tb.Fatalf("%s NormalizeScore: %v", p.Name(), st.Message())
		}
	}
	out := map[string]int64{}
	for _, s := range scores {
		out[s.Name] = s.Score
	}
	return out
}
