package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func newTestAlgorithm(parallelism int) *Algorithm {
	return &Algorithm{Profile: DefaultProfile(), Parallelism: parallelism, Rand: rand.New(rand.NewPCG(1, 2))}
}

func schedule(t *testing.T, a *Algorithm, pod *v1.Pod, snap *fw.Snapshot) (ScheduleResult, error) {
	t.Helper()
	return a.Schedule(context.Background(), st.PodInfo(t, pod), snap)
}

func TestScheduleFitErrorCountsReasons(t *testing.T) {
	gpu := v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
	snap := st.Snapshot(t, []*v1.Node{
		st.Node("small", st.Allocatable("cpu", "1")),
		st.Node("gpu1", st.Taints(gpu)), st.Node("gpu2", st.Taints(gpu)),
	})
	_, err := schedule(t, newTestAlgorithm(1), st.Pod("p", st.Req("cpu", "2")), snap)
	var fitErr *fw.FitError
	if !errors.As(err, &fitErr) {
		t.Fatalf("Schedule error = %v, want a FitError", err)
	}
	if want := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}."; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	if want := map[string]bool{"NodeResourcesFit": true, "TaintToleration": true}; !reflect.DeepEqual(fitErr.Diagnosis.UnschedulablePlugins, want) {
		t.Errorf("unschedulable plugins %v, want %v", fitErr.Diagnosis.UnschedulablePlugins, want)
	}
}

func TestScheduleFirstFailingFilterPerNode(t *testing.T) {
	// A cordoned node that is also too small reports only NodeUnschedulable,
	// the first filter in the profile's order.
	snap := st.Snapshot(t, []*v1.Node{st.Node("n", st.Unschedulable(), st.Allocatable("cpu", "1"))})
	_, err := schedule(t, newTestAlgorithm(1), st.Pod("p", st.Req("cpu", "2")), snap)
	if want := "0/1 nodes are available: 1 node(s) were unschedulable."; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestScheduleNoNodes(t *testing.T) {
	_, err := schedule(t, newTestAlgorithm(1), st.Pod("p"), st.Snapshot(t, nil))
	if !errors.Is(err, ErrNoNodesAvailable) {
		t.Fatalf("got %v, want ErrNoNodesAvailable", err)
	}
}

func TestSchedulePicksBestScoredNode(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*v1.Node
		pods  []*v1.Pod
		pod   *v1.Pod
		want  string
	}{
		{"least allocated", []*v1.Node{st.Node("busy"), st.Node("idle")},
			[]*v1.Pod{st.Pod("u", st.OnNode("busy"), st.Req("cpu", "3", "memory", "6Gi"))},
			st.Pod("p", st.Req("cpu", "500m")), "idle"},
		{"preferred node affinity", []*v1.Node{st.Node("a", st.Labels("zone", "a")), st.Node("b", st.Labels("zone", "b"))}, nil,
			st.Pod("p", st.WithAffinity(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
				{Weight: 1, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"b"}}}}},
			}}})), "b"},
		{"PreferNoSchedule taint avoided", []*v1.Node{st.Node("spot", st.Taints(v1.Taint{Key: "spot", Effect: v1.TaintEffectPreferNoSchedule})), st.Node("plain")}, nil,
			st.Pod("p"), "plain"},
		{"only feasible node", []*v1.Node{st.Node("x"), st.Node("y")}, nil, st.Pod("p", st.NodeSelector(v1.LabelHostname, "y")), "y"},
		{"topology spread ScheduleAnyway", []*v1.Node{st.Node("n1"), st.Node("n2")},
			[]*v1.Pod{st.Pod("w", st.OnNode("n1"), st.PodLabels("app", "web"))},
			st.Pod("p", st.PodLabels("app", "web"), st.Spread(v1.LabelHostname, 1, v1.ScheduleAnyway, "web")), "n2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := schedule(t, newTestAlgorithm(1), tc.pod, st.Snapshot(t, tc.nodes, tc.pods...))
			if err != nil {
				t.Fatal(err)
			}
			if res.SuggestedHost != tc.want {
				t.Errorf("scheduled to %s, want %s", res.SuggestedHost, tc.want)
			}
		})
	}
}

func TestTiesBrokenRandomly(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{st.Node("a"), st.Node("b"), st.Node("c"), st.Node("d")})
	a := newTestAlgorithm(1)
	seen := map[string]int{}
	for range 200 {
		res, err := schedule(t, a, st.Pod("p"), snap)
		if err != nil {
			t.Fatal(err)
		}
		seen[res.SuggestedHost]++
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		if seen[n] < 20 {
			t.Errorf("equal nodes chosen %v times, want each about 50 of 200", seen)
			break
		}
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		pct   int32
		nodes int
		want  int
	}{
		{0, 10, 10}, {0, 99, 99}, {0, 100, 100}, {0, 199, 100}, {0, 1000, 420}, {0, 5000, 500}, {0, 6000, 300}, {0, 20000, 1000},
		{30, 1000, 300}, {100, 1000, 1000}, {1, 1000, 100},
	}
	for _, tc := range tests {
		a := &Algorithm{PercentageOfNodesToScore: tc.pct}
		if got := a.NumFeasibleNodesToFind(tc.nodes); got != tc.want {
			t.Errorf("pct %d, %d nodes: %d, want %d", tc.pct, tc.nodes, got, tc.want)
		}
	}
}

func manyNodes(n int) []*v1.Node {
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		nodes[i] = st.Node(fmt.Sprintf("n%04d", i))
	}
	return nodes
}

func TestSamplingStopsEarlyAndRotatesStart(t *testing.T) {
	snap := st.Snapshot(t, manyNodes(1000))
	a := newTestAlgorithm(1)
	for i, wantNext := range []int{420, 840, 260} {
		res, err := schedule(t, a, st.Pod("p"), snap)
		if err != nil {
			t.Fatal(err)
		}
		if res.EvaluatedNodes != 420 || res.FeasibleNodes != 420 {
			t.Errorf("cycle %d: evaluated %d, feasible %d, want 420 each", i, res.EvaluatedNodes, res.FeasibleNodes)
		}
		if a.nextStartNodeIndex != wantNext {
			t.Errorf("cycle %d: next start %d, want %d", i, a.nextStartNodeIndex, wantNext)
		}
	}
}

func TestParallelFilterFindsTheOneNode(t *testing.T) {
	snap := st.Snapshot(t, manyNodes(1000))
	a := newTestAlgorithm(4)
	res, err := schedule(t, a, st.Pod("p", st.NodeSelector(v1.LabelHostname, "n0777")), snap)
	if err != nil {
		t.Fatal(err)
	}
	if res.SuggestedHost != "n0777" || res.EvaluatedNodes != 1000 {
		t.Errorf("got %+v, want n0777 after evaluating all 1000 nodes", res)
	}
	_, err = schedule(t, a, st.Pod("p", st.NodeSelector(v1.LabelHostname, "none")), snap)
	if want := "0/1000 nodes are available: 1000 node(s) didn't match Pod's node affinity/selector."; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestParallelSamplingFindsEnough(t *testing.T) {
	snap := st.Snapshot(t, manyNodes(5000))
	res, err := schedule(t, newTestAlgorithm(8), st.Pod("p"), snap)
	if err != nil {
		t.Fatal(err)
	}
	if res.FeasibleNodes != 500 {
		t.Errorf("feasible %d, want 500 (10%% of 5000)", res.FeasibleNodes)
	}
}
