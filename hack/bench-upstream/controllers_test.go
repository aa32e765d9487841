package main

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFakeKubeletReports(t *testing.T) {
	now := metav1.Now()
	withReady := func(phase v1.PodPhase, ready v1.ConditionStatus) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}, Status: v1.PodStatus{Phase: phase}}
		if ready != "" {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: ready}}
		}
		return p
	}
	deleted := withReady(v1.PodPending, "")
	deleted.DeletionTimestamp = &now
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"pending", withReady(v1.PodPending, ""), true},
		{"running and ready", withReady(v1.PodRunning, v1.ConditionTrue), false},
		{"running, marked not ready", withReady(v1.PodRunning, v1.ConditionFalse), true},
		{"succeeded", withReady(v1.PodSucceeded, v1.ConditionFalse), false},
		{"being deleted", deleted, false},
	} {
		if got := needsReport(tc.pod); got != tc.want {
			t.Errorf("%s: needsReport = %v, want %v", tc.name, got, tc.want)
		}
	}
	job := withReady(v1.PodPending, "")
	job.Spec.RestartPolicy = v1.RestartPolicyNever
	if st := podStatusOnFakeNode(job, now); st.Phase != v1.PodSucceeded || st.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("a Job's pod: %+v", st)
	}
	if st := podStatusOnFakeNode(withReady(v1.PodPending, ""), now); st.Phase != v1.PodRunning || needsReport(&v1.Pod{Status: st}) {
		t.Errorf("a daemon pod: %+v", st)
	}
}
