package scheduler

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func prio(n int32) st.PodOpt { return func(p *v1.Pod) { p.Spec.Priority = &n } }

func started(minutesAgo int) st.PodOpt {
	return func(p *v1.Pod) {
		t := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Add(-time.Duration(minutesAgo) * time.Minute))
		p.Status.StartTime = &t
	}
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// candidates runs a failing cycle for pod on snap and then FindCandidates.
func candidates(t *testing.T, pod *v1.Pod, snap *fw.Snapshot, pdbs ...*policyv1.PodDisruptionBudget) ([]Candidate, map[string]*fw.Status) {
	t.Helper()
	a := newTestAlgorithm(1)
	pi := st.PodInfo(t, pod)
	_, err := a.Schedule(context.Background(), pi, snap)
	var fitErr *fw.FitError
	if !errors.As(err, &fitErr) {
		t.Fatalf("schedule: %v, want a FitError", err)
	}
	return a.FindCandidates(context.Background(), pi, snap, fitErr.Diagnosis, pdbs)
}

func TestFindCandidatesVictims(t *testing.T) {
	node := func(name string) *v1.Node { return st.Node(name, st.Allocatable("cpu", "4", "pods", "10")) }
	high := st.Pod("high", st.Req("cpu", "2"), prio(100))
	for _, tc := range []struct {
		name    string
		nodes   []*v1.Node
		pods    []*v1.Pod
		pdbs    []*policyv1.PodDisruptionBudget
		want    map[string][]string // node → victims
		wantMsg string              // a node's status when no candidate
	}{
		{name: "the lower-priority pod freeing enough is the only victim",
			nodes: []*v1.Node{node("n1")},
			pods: []*v1.Pod{st.Pod("low", st.Req("cpu", "2"), prio(1), st.OnNode("n1")),
				st.Pod("peer", st.Req("cpu", "2"), prio(100), st.OnNode("n1"))},
			want: map[string][]string{"n1": {"low"}}},
		{name: "most important lower pods are reprieved first",
			nodes: []*v1.Node{node("n1")},
			pods: []*v1.Pod{st.Pod("a", st.Req("cpu", "2"), prio(10), st.OnNode("n1")),
				st.Pod("b", st.Req("cpu", "1"), prio(5), st.OnNode("n1")),
				st.Pod("c", st.Req("cpu", "1"), prio(1), st.OnNode("n1"))},
			want: map[string][]string{"n1": {"b", "c"}}},
		{name: "equal priority is never a victim",
			nodes:   []*v1.Node{node("n1")},
			pods:    []*v1.Pod{st.Pod("same", st.Req("cpu", "4"), prio(100), st.OnNode("n1"))},
			wantMsg: "No preemption victims found for incoming pod"},
		{name: "a node that cannot fit the pod even empty is no candidate",
			nodes:   []*v1.Node{st.Node("tiny", st.Allocatable("cpu", "1", "pods", "10"))},
			pods:    []*v1.Pod{st.Pod("low", st.Req("cpu", "1"), prio(1), st.OnNode("tiny"))},
			wantMsg: "Insufficient cpu"},
		{name: "PDB-protected pods are reprieved before the others",
			nodes: []*v1.Node{node("n1")},
			pods: []*v1.Pod{st.Pod("guarded", st.Req("cpu", "2"), prio(1), st.PodLabels("app", "db"), st.OnNode("n1"), started(10)),
				st.Pod("free", st.Req("cpu", "2"), prio(1), st.OnNode("n1"), started(5))},
			pdbs: []*policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
				Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
				Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}},
			want: map[string][]string{"n1": {"free"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cands, statuses := candidates(t, high, st.Snapshot(t, tc.nodes, tc.pods...), tc.pdbs...)
			got := map[string][]string{}
			for _, c := range cands {
				got[c.Node] = names(c.Victims)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("candidates %v, want %v (statuses %v)", got, tc.want, statuses)
			}
			for n, v := range tc.want {
				if !slices.Equal(got[n], v) {
					t.Errorf("node %s victims %v, want %v", n, got[n], v)
				}
			}
			if tc.wantMsg != "" {
				for _, s := range statuses {
					if s.Message() != tc.wantMsg {
						t.Errorf("status %q, want %q", s.Message(), tc.wantMsg)
					}
				}
			}
		})
	}
}

func TestPickCandidate(t *testing.T) {
	v := func(name string, p int32, minutesAgo int) *v1.Pod { return st.Pod(name, prio(p), started(minutesAgo)) }
	for _, tc := range []struct {
		name  string
		cands []Candidate
		want  string
	}{
		{"no victims wins at once", []Candidate{{Node: "a", Victims: []*v1.Pod{v("x", 1, 0)}}, {Node: "b"}}, "b"},
		{"fewest PDB violations", []Candidate{{Node: "a", Victims: []*v1.Pod{v("x", 1, 0)}, NumPDBViolations: 1},
			{Node: "b", Victims: []*v1.Pod{v("y", 5, 0), v("z", 5, 0)}}}, "b"},
		{"lowest highest priority", []Candidate{{Node: "a", Victims: []*v1.Pod{v("x", 5, 0)}},
			{Node: "b", Victims: []*v1.Pod{v("y", 3, 0), v("z", 3, 0)}}}, "b"},
		{"lowest priority sum", []Candidate{{Node: "a", Victims: []*v1.Pod{v("x", 5, 0), v("w", 4, 0)}},
			{Node: "b", Victims: []*v1.Pod{v("y", 5, 0), v("z", 1, 0)}}}, "b"},
		{"fewest victims", []Candidate{{Node: "a", Victims: []*v1.Pod{v("x", 5, 0), v("w", 0, 0)}},
			{Node: "b", Victims: []*v1.Pod{v("y", 5, 0)}}}, "b"},
		{"latest start of the top victims", []Candidate{{Node: "a", Victims: []*v1.Pod{v("x", 5, 30)}},
			{Node: "b", Victims: []*v1.Pod{v("y", 5, 1)}}}, "b"},
		{"first on a tie", []Candidate{{Node: "a", Victims: []*v1.Pod{v("x", 5, 1)}},
			{Node: "b", Victims: []*v1.Pod{v("y", 5, 1)}}}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PickCandidate(tc.cands); got == nil || got.Node != tc.want {
				t.Fatalf("picked %+v, want %s", got, tc.want)
			}
		})
	}
	if PickCandidate(nil) != nil {
		t.Fatal("a candidate from none")
	}
}

func TestEligibleToPreempt(t *testing.T) {
	never := v1.PreemptNever
	snap := st.Snapshot(t, []*v1.Node{st.Node("n1")}, st.Pod("going", prio(1), st.OnNode("n1"), func(p *v1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}))
	p := st.Pod("p", prio(10), func(p *v1.Pod) { p.Spec.PreemptionPolicy = &never })
	if ok, msg := EligibleToPreempt(p, snap, nil); ok || msg != "not eligible due to preemptionPolicy=Never." {
		t.Errorf("Never: %v %q", ok, msg)
	}
	nominated := st.Pod("p", prio(10), func(p *v1.Pod) { p.Status.NominatedNodeName = "n1" })
	if ok, msg := EligibleToPreempt(nominated, snap, fw.NewStatus(fw.Unschedulable, "Insufficient cpu")); ok || msg != "not eligible due to a terminating pod on the nominated node." {
		t.Errorf("terminating victim on the nominated node: %v %q", ok, msg)
	}
	if ok, _ := EligibleToPreempt(nominated, snap, fw.NewStatus(fw.UnschedulableAndUnresolvable, "taint")); !ok {
		t.Error("a nominated node that can no longer fit should not block preemption elsewhere")
	}
	if ok, _ := EligibleToPreempt(st.Pod("q", prio(10)), snap, nil); !ok {
		t.Error("a plain pod should be eligible")
	}
}
