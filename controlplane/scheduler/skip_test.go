package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	st "berth/controlplane/scheduler/schedtest"
)

// TestSkipPodBoundDespiteBindingError is the regression test for a pod
// whose binding returned an error (an etcd timeout) yet was stored: the
// requeued pod must be skipped, not scheduled again (which looped on
// "already in the cache").
func TestSkipPodBoundDespiteBindingError(t *testing.T) {
	client := kubernetes.New(nil)
	factory := informers.NewSharedInformerFactory(client, 0)
	s, err := New(Config{Client: client, Informers: factory})
	if err != nil {
		t.Fatal(err)
	}
	store := factory.Core().V1().Pods().Informer().GetIndexer()
	add := func(p *v1.Pod) {
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	pending := st.Pod("pending")
	add(pending)
	bound := st.Pod("bound")
	add(st.Pod("bound", st.OnNode("n1")))
	s.cache.AddPod(st.Pod("bound", st.OnNode("n1")))
	assumed := st.Pod("assumed")
	add(assumed)
	a := assumed.DeepCopy()
	a.Spec.NodeName = "n1"
	if err := s.cache.AssumePod(a); err != nil {
		t.Fatal(err)
	}
	replaced := st.Pod("replaced")
	add(st.Pod("replaced", func(p *v1.Pod) { p.UID = "new-uid" }))
	other := st.Pod("other")
	add(st.Pod("other", func(p *v1.Pod) { p.Spec.SchedulerName = "someone-else" }))

	tests := []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"pending pod is scheduled", pending, false},
		{"pod bound by an erroring binding is skipped", bound, true},
		{"assumed pod is skipped", assumed, true},
		{"deleted pod is skipped", st.Pod("gone"), true},
		{"pod recreated with another UID is skipped", replaced, true},
		{"pod moved to another scheduler is skipped", other, true},
	}
	for _, tc := range tests {
		if got := s.skip(tc.pod); got != tc.want {
			t.Errorf("%s: skip = %v, want %v", tc.name, got, tc.want)
		}
	}
}
