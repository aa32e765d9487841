package scheduler

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "berth/controlplane/scheduler/framework"
	st "berth/controlplane/scheduler/schedtest"
)

func withPriority(p int32) st.PodOpt { return func(pod *v1.Pod) { pod.Spec.Priority = &p } }

// A node whose room a preemptor was nominated for is full to pods of no
// higher priority than the preemptor's, free to a higher one, and free to
// the preemptor itself.
func TestScheduleLeavesRoomForNominatedPods(t *testing.T) {
	snap := st.Snapshot(t, []*v1.Node{st.Node("full", st.Allocatable("cpu", "2"))})
	preemptor := st.Pod("preemptor", st.Req("cpu", "2"), withPriority(100))
	nom := newNominator()
	a := newTestAlgorithm(1)
	a.Nominated = nom.onNode
	nom.set(st.PodInfo(t, preemptor), "full")

	tests := []struct {
		name string
		pod  *v1.Pod
		fits bool
	}{
		{"lower priority", st.Pod("replacement", st.Req("cpu", "1"), withPriority(10)), false},
		{"same priority", st.Pod("peer", st.Req("cpu", "1"), withPriority(100)), false},
		{"higher priority", st.Pod("urgent", st.Req("cpu", "1"), withPriority(1000)), true},
		{"the preemptor", preemptor, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := schedule(t, a, tt.pod, snap)
			var fitErr *fw.FitError
			switch {
			case tt.fits && err != nil:
				t.Fatalf("Schedule: %v, want node full", err)
			case tt.fits && res.SuggestedHost != "full":
				t.Fatalf("scheduled to %q, want full", res.SuggestedHost)
			case !tt.fits && !errors.As(err, &fitErr):
				t.Fatalf("Schedule = %+v, %v; want a FitError (the room is the preemptor's)", res, err)
			}
		})
	}

	nom.remove(preemptor.UID)
	if _, err := schedule(t, a, st.Pod("later", st.Req("cpu", "1")), snap); err != nil {
		t.Fatalf("after the nomination is gone: %v", err)
	}
}

// An informer update that says nothing of a nomination keeps the one the
// scheduler made itself; one that clears it clears it.
func TestNominatorUpdate(t *testing.T) {
	nom := newNominator()
	pod := st.Pod("p", withPriority(5))
	nom.set(st.PodInfo(t, pod), "n1")
	nom.update(pod, pod.DeepCopy())
	if got := len(nom.onNode("n1", st.Pod("q"))); got != 1 {
		t.Fatalf("after an update without nomination: %d pods nominated to n1, want 1", got)
	}
	withNom := pod.DeepCopy()
	withNom.Status.NominatedNodeName = "n2"
	nom.update(pod, withNom)
	if len(nom.onNode("n1", st.Pod("q"))) != 0 || len(nom.onNode("n2", st.Pod("q"))) != 1 {
		t.Fatal("the status's nomination to n2 did not replace n1")
	}
	nom.update(withNom, pod)
	if len(nom.onNode("n2", st.Pod("q"))) != 0 {
		t.Fatal("a cleared nomination was kept")
	}
}
