package framework_test

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func TestFitErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		diag fw.Diagnosis
		all  int
		want string
	}{
		{"reasons counted and sorted", fw.Diagnosis{NodeToStatus: map[string]*fw.Status{
			"n1": fw.NewStatus(fw.Unschedulable, "Insufficient cpu"),
			"n2": fw.NewStatus(fw.UnschedulableAndUnresolvable, "node(s) had untolerated taint {dedicated: gpu}"),
			"n3": fw.NewStatus(fw.UnschedulableAndUnresolvable, "node(s) had untolerated taint {dedicated: gpu}"),
		}}, 3, "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}."},
		{"several reasons of one node each count", fw.Diagnosis{NodeToStatus: map[string]*fw.Status{
			"n1": fw.NewStatus(fw.Unschedulable, "Insufficient cpu", "Insufficient memory"),
			"n2": fw.NewStatus(fw.Unschedulable, "Insufficient memory"),
		}}, 2, "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."},
		{"sorting is by the whole string, count first", fw.Diagnosis{NodeToStatus: map[string]*fw.Status{
			"n1": fw.NewStatus(fw.Unschedulable, "b"), "n2": fw.NewStatus(fw.Unschedulable, "b"),
			"n3": fw.NewStatus(fw.Unschedulable, "a"),
		}}, 3, "0/3 nodes are available: 1 a, 2 b."},
		{"prefilter message replaces the histogram", fw.Diagnosis{PreFilterMsg: "pod has unbound immediate PersistentVolumeClaims",
			NodeToStatus: map[string]*fw.Status{"n1": fw.NewStatus(fw.Unschedulable, "x")}}, 1,
			"0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := &fw.FitError{NumAllNodes: tc.all, Diagnosis: tc.diag}
			if got := err.Error(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNodeInfoAddRemove(t *testing.T) {
	ni := fw.NewNodeInfo(st.Node("n"))
	a := st.PodInfo(t, st.Pod("a", st.OnNode("n"), st.Req("cpu", "1", "memory", "1Gi"), st.HostPort(v1.ProtocolTCP, "", 80)))
	b := st.PodInfo(t, st.Pod("b", st.OnNode("n"), st.WithAffinity(&v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{TopologyKey: v1.LabelHostname}},
	}})))
	ni.AddPod(a)
	ni.AddPod(b)
	if ni.Requested.MilliCPU != 1000 || ni.Requested.Memory != 1<<30 {
		t.Errorf("requested = %+v, want 1000m cpu and 1Gi", ni.Requested)
	}
	// b has no requests: non-zero defaults 100m and 200Mi.
	if ni.NonZeroRequested.MilliCPU != 1100 || ni.NonZeroRequested.Memory != 1<<30+fw.DefaultMemoryRequest {
		t.Errorf("non-zero requested = %+v", ni.NonZeroRequested)
	}
	if len(ni.PodsWithAffinity) != 1 || len(ni.PodsWithRequiredAntiAffinity) != 1 || len(ni.UsedPorts) != 1 {
		t.Errorf("affinity/anti/ports = %d/%d/%d, want 1/1/1", len(ni.PodsWithAffinity), len(ni.PodsWithRequiredAntiAffinity), len(ni.UsedPorts))
	}
	clone := ni.Clone()
	if !ni.RemovePod(a.Pod.UID) || ni.RemovePod("nope") {
		t.Fatal("RemovePod: want true for a present pod, false for an absent one")
	}
	if !ni.Requested.IsZero() || len(ni.UsedPorts) != 0 || len(ni.Pods) != 1 {
		t.Errorf("after removing a: requested %+v, ports %v, pods %d", ni.Requested, ni.UsedPorts, len(ni.Pods))
	}
	if len(clone.Pods) != 2 || clone.Requested.MilliCPU != 1000 {
		t.Errorf("clone changed with the original: %d pods, %dm", len(clone.Pods), clone.Requested.MilliCPU)
	}
}

func TestPodRequests(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := st.Pod("p", st.Req("cpu", "1", "memory", "1Gi"), st.Container("busybox", "cpu", "500m"), func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{
			{Name: "sidecar", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: mustQ("250m")}}},
			{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: mustQ("3Gi")}}},
		}
		p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: mustQ("100m")}
	})
	// cpu: app 1.5 + sidecar 0.25 + overhead 0.1; memory: max(app 1Gi, init 3Gi + sidecar 0) = 3Gi.
	got := fw.PodRequests(pod)
	if got.MilliCPU != 1850 || got.Memory != 3<<30 {
		t.Errorf("PodRequests = %+v, want 1850m and 3Gi", got)
	}
}

func TestNormalizedImageName(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                  "busybox:latest",
		"busybox:1.36":             "busybox:1.36",
		"127.0.0.1:5000/busybox":   "127.0.0.1:5000/busybox:latest",
		"127.0.0.1:5000/busybox:1": "127.0.0.1:5000/busybox:1",
		"busybox@sha256:abcd":      "busybox@sha256:abcd",
	} {
		if got := fw.NormalizedImageName(in); got != want {
			t.Errorf("NormalizedImageName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSnapshotImageStates(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{
		st.Node("n1", st.Image(100, "nginx:1", "nginx@sha256:x")),
		st.Node("n2", st.Image(100, "nginx:1")),
		st.Node("n3"),
	})
	got := map[string]int{}
	for _, n := range snap.Nodes {
		if s := n.ImageStates["nginx:1"]; s != nil {
			got[n.Name()] = s.NumNodes
		}
	}
	if want := map[string]int{"n1": 2, "n2": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("nginx:1 NumNodes per node = %v, want %v", got, want)
	}
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }
