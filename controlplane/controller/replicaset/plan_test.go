package replicaset

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}
func readyFor(d time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-d))}}
	}
}
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	}
}
func age(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-d)) }
}
func cost(c string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{PodDeletionCostAnnotation: c} }
}
func deleting() podOpt {
	return func(p *corev1.Pod) { ts := metav1.NewTime(now); p.DeletionTimestamp = &ts }
}
func ownedBy(uid types.UID) podOpt {
	return func(p *corev1.Pod) {
		t := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: uid, Controller: &t}}
	}
}
func lbl(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }

func mkPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("u-" + name), Labels: map[string]string{"app": "web"}, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func mkRS(n int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "rs-uid", Generation: 3},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "fe"}}},
		},
	}
}

func podNames(ps []*corev1.Pod) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestRankForDeletion(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want []string
	}{
		{"unscheduled before scheduled", []*corev1.Pod{mkPod("a", onNode("n1"), phase(corev1.PodPending)), mkPod("b", phase(corev1.PodPending))}, []string{"b", "a"}},
		{"pending before unknown before running", []*corev1.Pod{mkPod("run", onNode("n1"), phase(corev1.PodRunning)), mkPod("unk", onNode("n2"), phase(corev1.PodUnknown)), mkPod("pend", onNode("n3"), phase(corev1.PodPending))}, []string{"pend", "unk", "run"}},
		{"not ready before ready", []*corev1.Pod{mkPod("ready", onNode("n1"), readyFor(time.Hour)), mkPod("notready", onNode("n2"), phase(corev1.PodRunning))}, []string{"notready", "ready"}},
		{"lower deletion cost first", []*corev1.Pod{mkPod("hi", onNode("n1"), readyFor(time.Hour), cost("10")), mkPod("lo", onNode("n2"), readyFor(time.Hour), cost("-5")), mkPod("zero", onNode("n3"), readyFor(time.Hour))}, []string{"lo", "zero", "hi"}},
		{"doubled-up nodes first", []*corev1.Pod{mkPod("alone", onNode("n1"), readyFor(time.Hour)), mkPod("pair1", onNode("n2"), readyFor(time.Hour)), mkPod("pair2", onNode("n2"), readyFor(time.Hour))}, []string{"pair1", "pair2", "alone"}},
		{"ready for less time first (log scale)", []*corev1.Pod{mkPod("old", onNode("n1"), readyFor(time.Hour)), mkPod("new", onNode("n2"), readyFor(time.Minute))}, []string{"new", "old"}},
		{"same log2 bucket of ready time falls through to restarts", []*corev1.Pod{mkPod("few", onNode("n1"), readyFor(70*time.Second), restarts(1)), mkPod("many", onNode("n2"), readyFor(75*time.Second), restarts(7))}, []string{"many", "few"}},
		{"more restarts first", []*corev1.Pod{mkPod("r0", onNode("n1"), phase(corev1.PodRunning)), mkPod("r5", onNode("n2"), phase(corev1.PodRunning), restarts(5))}, []string{"r5", "r0"}},
		{"newer first", []*corev1.Pod{mkPod("older", onNode("n1"), phase(corev1.PodRunning), age(10*time.Hour)), mkPod("newer", onNode("n2"), phase(corev1.PodRunning), age(time.Minute))}, []string{"newer", "older"}},
		{"unscheduled beats every later rule", []*corev1.Pod{mkPod("sched-pending-restarts", onNode("n1"), phase(corev1.PodPending), restarts(9)), mkPod("unsched-running", phase(corev1.PodRunning))}, []string{"unsched-running", "sched-pending-restarts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podNames(RankForDeletion(tc.pods, tc.pods, now))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("order = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestManage(t *testing.T) {
	pods := func(n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, mkPod(fmt.Sprintf("p%d", i), onNode("n"), readyFor(time.Hour), ownedBy("rs-uid")))
		}
		return out
	}
	beingDeleted := mkRS(3)
	ts := metav1.NewTime(now)
	beingDeleted.DeletionTimestamp = &ts
	for _, tc := range []struct {
		name       string
		rs         *appsv1.ReplicaSet
		owned      []*corev1.Pod
		satisfied  bool
		wantCreate int
		wantDelete []string
	}{
		{"scale up from zero", mkRS(3), nil, true, 3, nil},
		{"in sync", mkRS(2), pods(2), true, 0, nil},
		{"scale down picks not-ready pod", mkRS(2), append(pods(2), mkPod("notready", onNode("n"), phase(corev1.PodRunning))), true, 0, []string{"notready"}},
		{"unsatisfied expectations hold back", mkRS(5), pods(1), false, 0, nil},
		{"being deleted does nothing", beingDeleted, nil, true, 0, nil},
		{"burst cap", mkRS(2000), nil, true, BurstReplicas, nil},
		{"nil replicas means one", &appsv1.ReplicaSet{}, nil, true, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := Manage(tc.rs, tc.owned, nil, tc.satisfied, now)
			if plan.Create != tc.wantCreate {
				t.Fatalf("create = %d, want %d", plan.Create, tc.wantCreate)
			}
			if got := podNames(plan.Delete); len(got) != len(tc.wantDelete) || (len(got) > 0 && !slices.Equal(got, tc.wantDelete)) {
				t.Fatalf("delete = %v, want %v", got, tc.wantDelete)
			}
		})
	}
}

func TestClaim(t *testing.T) {
	rs := mkRS(1)
	sel := labels.SelectorFromSet(rs.Spec.Selector.MatchLabels)
	pods := []*corev1.Pod{
		mkPod("mine", ownedBy("rs-uid")),
		mkPod("orphan"),
		mkPod("finished-orphan", phase(corev1.PodSucceeded)),
		mkPod("deleting-mine", ownedBy("rs-uid"), deleting()),
		mkPod("other", ownedBy("x")),
		mkPod("mine-relabelled", ownedBy("rs-uid"), lbl("app", "db")),
	}
	c := Claim(rs, sel, pods)
	if got := podNames(c.Owned); !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("owned = %v", got)
	}
	if got := podNames(c.Adopt); !slices.Equal(got, []string{"orphan"}) {
		t.Fatalf("adopt = %v", got)
	}
	if got := podNames(c.Release); !slices.Equal(got, []string{"mine-relabelled"}) {
		t.Fatalf("release = %v", got)
	}
}

func TestSlowStartBatches(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int
	}{
		{0, nil}, {1, []int{1}}, {2, []int{1, 1}}, {3, []int{1, 2}}, {7, []int{1, 2, 4}}, {10, []int{1, 2, 4, 3}}, {500, []int{1, 2, 4, 8, 16, 32, 64, 128, 245}},
	} {
		if got := SlowStartBatches(tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("SlowStartBatches(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestCalculateStatus(t *testing.T) {
	rs := mkRS(4)
	rs.Spec.MinReadySeconds = 30
	owned := []*corev1.Pod{
		mkPod("avail", readyFor(time.Minute), lbl("tier", "fe")),
		mkPod("readyNotAvail", readyFor(10*time.Second), lbl("tier", "fe")),
		mkPod("partialLabels", readyFor(time.Minute)),
	}
	st := CalculateStatus(rs, owned, nil, now)
	if st.Replicas != 3 || st.FullyLabeledReplicas != 2 || st.ReadyReplicas != 3 || st.AvailableReplicas != 2 || st.ObservedGeneration != 3 {
		t.Fatalf("status = %+v", st)
	}
	if len(st.Conditions) != 0 {
		t.Fatalf("conditions = %v", st.Conditions)
	}

	failed := CalculateStatus(rs, owned, errors.New("quota exceeded"), now)
	if len(failed.Conditions) != 1 || failed.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure || failed.Conditions[0].Reason != ReasonFailedCreate || failed.Conditions[0].Message != "quota exceeded" {
		t.Fatalf("failure conditions = %+v", failed.Conditions)
	}
	rs.Status = failed
	if cleared := CalculateStatus(rs, owned, nil, now); len(cleared.Conditions) != 0 {
		t.Fatalf("condition not cleared: %+v", cleared.Conditions)
	}
	rs.Spec.Replicas = new(int32)
	rs.Status = appsv1.ReplicaSetStatus{}
	if del := CalculateStatus(rs, owned, errors.New("boom"), now); del.Conditions[0].Reason != ReasonFailedDelete {
		t.Fatalf("reason = %q, want %q", del.Conditions[0].Reason, ReasonFailedDelete)
	}
}

func TestExpectations(t *testing.T) {
	clk := testclock.NewFakeClock(now)
	e := NewExpectations(clk)
	if !e.Satisfied("k") {
		t.Fatal("no record must be satisfied")
	}
	e.ExpectCreations("k", 2)
	e.CreationObserved("k")
	if e.Satisfied("k") {
		t.Fatal("one of two creations seen: not satisfied")
	}
	e.CreationObserved("k")
	if !e.Satisfied("k") {
		t.Fatal("all creations seen: satisfied")
	}
	e.ExpectDeletions("k", []string{"ns/a", "ns/b"})
	e.DeletionObserved("k", "ns/a")
	e.DeletionObserved("k", "ns/a") // seen twice (terminating, then gone): counted once
	if e.Satisfied("k") {
		t.Fatal("b not yet seen: not satisfied")
	}
	clk.Step(ExpectationsTTL + time.Second)
	if !e.Satisfied("k") {
		t.Fatal("expired expectations must be satisfied")
	}
}

func TestPodFromTemplate(t *testing.T) {
	rs := mkRS(1)
	p := PodFromTemplate(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	if p.GenerateName != "rs-" || p.Namespace != "ns" || p.Labels["tier"] != "fe" {
		t.Fatalf("pod meta = %+v", p.ObjectMeta)
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.UID != "rs-uid" || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Fatalf("controller ref = %+v", ref)
	}
	p.Labels["x"] = "y"
	if _, ok := rs.Spec.Template.Labels["x"]; ok {
		t.Fatal("pod shares the template's label map")
	}
}

func TestRelatedPodsRanking(t *testing.T) {
	t1 := true
	deployRef := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "d-uid", Controller: &t1}}
	rs := mkRS(1)
	rs.OwnerReferences = deployRef
	sibling := mkRS(1)
	sibling.Name, sibling.UID, sibling.OwnerReferences = "rs-old", "old-uid", deployRef
	stranger := mkRS(1)
	stranger.Name, stranger.UID = "other", "other-uid"
	mine := []*corev1.Pod{mkPod("on-a", onNode("a"), readyFor(time.Hour), ownedBy("rs-uid")), mkPod("on-b", onNode("b"), readyFor(time.Hour), ownedBy("rs-uid"))}
	all := append([]*corev1.Pod{
		// The sibling (same Deployment) doubles up node b; the stranger's
		// pods on node a do not count.
		mkPod("sib-b", onNode("b"), readyFor(time.Hour), ownedBy("old-uid")),
		mkPod("x-a1", onNode("a"), ownedBy("other-uid")), mkPod("x-a2", onNode("a"), ownedBy("other-uid")),
	}, mine...)
	related := RelatedPods(rs, []*appsv1.ReplicaSet{rs, sibling, stranger}, all)
	if got := podNames(related); !slices.Equal(got, []string{"sib-b", "on-a", "on-b"}) {
		t.Fatalf("related = %v", got)
	}
	plan := Manage(rs, mine, related, true, now)
	if got := podNames(plan.Delete); !slices.Equal(got, []string{"on-b"}) {
		t.Fatalf("delete = %v, want the pod sharing node b with its sibling's", got)
	}
}
