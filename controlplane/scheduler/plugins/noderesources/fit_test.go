package noderesources

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func rl(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func withInit(restartable bool, kv ...string) st.PodOpt {
	return func(p *v1.Pod) {
		c := v1.Container{Name: "init" + string(rune('0'+len(p.Spec.InitContainers))), Image: "busybox", Resources: v1.ResourceRequirements{Requests: rl(kv...)}}
		if restartable {
			always := v1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func withOverhead(kv ...string) st.PodOpt { return func(p *v1.Pod) { p.Spec.Overhead = rl(kv...) } }

func TestFitFilter(t *testing.T) {
	// node: cpu 4, memory 8Gi, ephemeral-storage 10Gi, pods 3; already runs
	// 1.5 cpu and 6Gi memory in two pods.
	node := st.Node("n", st.Allocatable("pods", "3", "ephemeral-storage", "10Gi"))
	used := []*v1.Pod{st.Pod("u1", st.OnNode("n"), st.Req("cpu", "1", "memory", "4Gi")), st.Pod("u2", st.OnNode("n"), st.Req("cpu", "500m", "memory", "2Gi"))}
	full := st.Node("full", st.Allocatable("pods", "2"))
	fullPods := []*v1.Pod{st.Pod("f1", st.OnNode("full")), st.Pod("f2", st.OnNode("full"))}
	snap := st.Snapshot(t, []*v1.Node{node, full}, append(used, fullPods...)...)
	tests := []struct {
		name     string
		pod      *v1.Pod
		wantN    []string
		wantFull []string
	}{
		{"fits", st.Pod("p", st.Req("cpu", "2", "memory", "2Gi")), nil, []string{ErrReasonTooManyPods}},
		{"too much cpu", st.Pod("p", st.Req("cpu", "2600m")), []string{"Insufficient cpu"}, []string{ErrReasonTooManyPods}},
		{"cpu and memory", st.Pod("p", st.Req("cpu", "3", "memory", "3Gi")), []string{"Insufficient cpu", "Insufficient memory"},
			[]string{ErrReasonTooManyPods}},
		{"ephemeral storage", st.Pod("p", st.Req("ephemeral-storage", "11Gi")), []string{"Insufficient ephemeral-storage"},
			[]string{ErrReasonTooManyPods, "Insufficient ephemeral-storage"}},
		{"extended resource the node lacks", st.Pod("p", st.Req("example.com/gpu", "1")), []string{"Insufficient example.com/gpu"},
			[]string{ErrReasonTooManyPods, "Insufficient example.com/gpu"}},
		{"app containers add up", st.Pod("p", st.Req("cpu", "1500m"), st.Container("busybox", "cpu", "1500m")), []string{"Insufficient cpu"},
			[]string{ErrReasonTooManyPods}},
		{"an init container larger than the app containers counts", st.Pod("p", st.Req("cpu", "1"), withInit(false, "cpu", "3")), []string{"Insufficient cpu"},
			[]string{ErrReasonTooManyPods}},
		{"init containers are not summed", st.Pod("p", st.Req("cpu", "1"), withInit(false, "cpu", "2"), withInit(false, "cpu", "2")), nil,
			[]string{ErrReasonTooManyPods}},
		{"a restartable init container adds to the app containers", st.Pod("p", st.Req("cpu", "2"), withInit(true, "cpu", "1")), []string{"Insufficient cpu"},
			[]string{ErrReasonTooManyPods}},
		{"pod overhead adds", st.Pod("p", st.Req("cpu", "2"), withOverhead("cpu", "1")), []string{"Insufficient cpu"},
			[]string{ErrReasonTooManyPods}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := st.RunFilter(t, NewFit(), tc.pod, snap)
			want := map[string]st.FilterResult{"n": {}, "full": {}}
			if tc.wantN != nil {
				want["n"] = st.FilterResult{Code: fw.Unschedulable, Reasons: tc.wantN}
			}
			if tc.wantFull != nil {
				want["full"] = st.FilterResult{Code: fw.Unschedulable, Reasons: tc.wantFull}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestLeastAllocatedScore(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{st.Node("busy"), st.Node("empty"), st.Node("over", st.Allocatable("cpu", "500m"))},
		st.Pod("u", st.OnNode("busy"), st.Req("cpu", "1", "memory", "2Gi")))
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		// busy: cpu (4000-2000)/4000 → 50, memory (8-4)/8 → 50; empty: 75, 75;
		// over: cpu over capacity → 0, memory 75 → 37.
		{"requests", st.Pod("p", st.Req("cpu", "1", "memory", "2Gi")), map[string]int64{"busy": 50, "empty": 75, "over": 37}},
		// no requests: 100m and 200Mi assumed: empty cpu 97, memory 97.
		{"non-zero defaults", st.Pod("p"), map[string]int64{"busy": 72, "empty": 97, "over": 88}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunScore(t, NewFit(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBalancedAllocationScore(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{st.Node("empty"), st.Node("cpu-heavy")},
		st.Pod("u", st.OnNode("cpu-heavy"), st.Req("cpu", "2", "memory", "0")))
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		// empty: cpu 0.25, memory 0.5 → std 0.125 → 87; cpu-heavy: 0.75, 0.5 → 87.
		{"uneven", st.Pod("p", st.Req("cpu", "1", "memory", "4Gi")), map[string]int64{"empty": 87, "cpu-heavy": 87}},
		// empty: 0.5, 0.5 → 100; cpu-heavy: 1.0, 0.5 → 75.
		{"even on the empty node", st.Pod("p", st.Req("cpu", "2", "memory", "4Gi")), map[string]int64{"empty": 100, "cpu-heavy": 75}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.RunScore(t, NewBalancedAllocation(), tc.pod, snap); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
