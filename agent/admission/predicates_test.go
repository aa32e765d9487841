package admission

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/source"
)

func testNode() *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a", v1.LabelOSStable: "linux"}},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute}, {Key: "soft", Effect: v1.TaintEffectNoSchedule}}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("3"),
			"example.com/dongle": resource.MustParse("1"),
		}},
	}
}

type podOpt func(*v1.Pod)

func pod(uid string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)},
		Spec: v1.PodSpec{
			NodeName:    "n1",
			Containers:  []v1.Container{{Name: "app"}},
			Tolerations: []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func requests(rl v1.ResourceList) podOpt {
	return func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = rl }
}

func hostPort(proto v1.Protocol, ip string, port int32) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, HostIP: ip, Protocol: proto})
	}
}

func TestAdmit(t *testing.T) {
	cpu := func(q string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)} }
	strict := v1.SupplementalGroupsPolicyStrict
	tests := []struct {
		name            string
		pod             *v1.Pod
		others          []*v1.Pod
		node            func(*v1.Node)
		reason, message string
	}{
		{name: "fits", pod: pod("p", requests(cpu("1")), hostPort(v1.ProtocolTCP, "", 8080)), others: []*v1.Pod{pod("o", requests(cpu("1")), hostPort(v1.ProtocolUDP, "", 8080))}},
		{name: "host port taken", pod: pod("p", hostPort("", "", 21017)), others: []*v1.Pod{pod("o", hostPort(v1.ProtocolTCP, "", 21017))},
			reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "host port on another address is free", pod: pod("p", hostPort(v1.ProtocolTCP, "10.0.0.2", 80)), others: []*v1.Pod{pod("o", hostPort(v1.ProtocolTCP, "10.0.0.1", 80))}},
		{name: "the pod itself is not another pod", pod: pod("p", hostPort(v1.ProtocolTCP, "", 80)), others: []*v1.Pod{pod("p", hostPort(v1.ProtocolTCP, "", 80))}},
		{name: "cpu", pod: pod("p", requests(cpu("1500m"))), others: []*v1.Pod{pod("o", requests(cpu("1")))},
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"},
		{name: "memory", pod: pod("p", requests(v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")})),
			reason: "OutOfmemory", message: "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824"},
		{name: "too many pods comes first", pod: pod("p", requests(cpu("3")), hostPort(v1.ProtocolTCP, "", 80)), others: []*v1.Pod{pod("a", hostPort(v1.ProtocolTCP, "", 80)), pod("b"), pod("c")},
			reason: "OutOfpods", message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "advertised extended resource", pod: pod("p", requests(v1.ResourceList{"example.com/dongle": resource.MustParse("2")})),
			reason: "OutOfexample.com/dongle", message: "Node didn't have enough resource: example.com/dongle, requested: 2, used: 0, capacity: 1"},
		{name: "unadvertised extended resource is left out", pod: pod("p", requests(v1.ResourceList{"example.com/cluster-wide": resource.MustParse("5")}))},
		{name: "node selector", pod: pod("p", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }),
			reason: "NodeAffinity", message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "node name", pod: pod("p", func(p *v1.Pod) { p.Spec.NodeName = "n2" }),
			reason: "NodeName", message: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{name: "untolerated NoExecute taint", pod: pod("p", func(p *v1.Pod) { p.Spec.Tolerations = nil }),
			reason: "TaintToleration", message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{name: "static pods are spared the taints", pod: pod("p", func(p *v1.Pod) {
			p.Spec.Tolerations = nil
			p.Annotations = map[string]string{source.AnnotationConfigSource: "file"}
		})},
		{name: "os label", pod: pod("p", func(p *v1.Pod) { p.Labels = map[string]string{v1.LabelOSStable: "windows"} }),
			reason: "PodOSSelectorNodeLabelDoesNotMatch", message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{name: "a wrong node os label reads as this os", node: func(n *v1.Node) { n.Labels[v1.LabelOSStable] = "windows" },
			pod: pod("p", func(p *v1.Pod) { p.Labels = map[string]string{v1.LabelOSStable: "linux"} })},
		{name: "os field", pod: pod("p", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.Windows} }),
			reason: "PodOSNotSupported", message: "Failed to admit pod as the OS field doesn't match node OS"},
		{name: "strict supplemental groups on a node without the feature", pod: pod("p", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
		}), reason: "SupplementalGroupsPolicyNotSupported", message: "SupplementalGroupsPolicy=Strict is not supported in this node"},
		{name: "strict supplemental groups on a node with it", node: func(n *v1.Node) {
			yes := true
			n.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: &yes}
		}, pod: pod("p", func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict} })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode()
			if tc.node != nil {
				tc.node(n)
			}
			p := New(func() (*v1.Node, error) { return n, nil })
			reason, message, ok := p.Admit(tc.pod, tc.others)
			if ok != (tc.reason == "") || reason != tc.reason || message != tc.message {
				t.Errorf("Admit = %q, %q, %v; want %q, %q", reason, message, ok, tc.reason, tc.message)
			}
		})
	}
}

func TestAdmitWithoutNode(t *testing.T) {
	p := New(func() (*v1.Node, error) { return nil, errors.New("no node") })
	if reason, message, ok := p.Admit(pod("p"), nil); ok || reason != ReasonInvalidNodeInfo || message != "Kubelet cannot get node info." {
		t.Errorf("Admit = %q, %q, %v", reason, message, ok)
	}
}
