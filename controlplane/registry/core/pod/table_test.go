package pod

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func waiting(name, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}
}
func runningReady(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, Ready: true, Started: ptr(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}
func terminated(name string, code int32, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}
}

func TestSummarizeStatusColumn(t *testing.T) {
	twoInits := []v1.Container{{Name: "i1"}, {Name: "i2"}}
	for name, tc := range map[string]struct {
		pod      func(p *v1.Pod)
		status   string
		ready    string
		restarts int
	}{
		"pending, no statuses": {func(p *v1.Pod) { p.Status.Phase = v1.PodPending }, "Pending", "0/1", 0},
		"running ready": {func(p *v1.Pod) {
			p.Status.Phase = v1.PodRunning
			p.Status.ContainerStatuses = []v1.ContainerStatus{runningReady("c")}
		}, "Running", "1/1", 0},
		"crash loop": {func(p *v1.Pod) {
			p.Status.Phase = v1.PodRunning
			st := waiting("c", "CrashLoopBackOff")
			st.RestartCount = 4
			p.Status.ContainerStatuses = []v1.ContainerStatus{st}
		}, "CrashLoopBackOff", "0/1", 4},
		"image pull backoff": {func(p *v1.Pod) {
			p.Status.Phase = v1.PodPending
			p.Status.ContainerStatuses = []v1.ContainerStatus{waiting("c", "ImagePullBackOff")}
		}, "ImagePullBackOff", "0/1", 0},
		"completed": {func(p *v1.Pod) {
			p.Status.Phase = v1.PodSucceeded
			p.Status.ContainerStatuses = []v1.ContainerStatus{terminated("c", 0, "Completed")}
		}, "Completed", "0/1", 0},
		"error": {func(p *v1.Pod) {
			p.Status.Phase = v1.PodFailed
			p.Status.ContainerStatuses = []v1.ContainerStatus{terminated("c", 1, "Error")}
		}, "Error", "0/1", 0},
		"exit code without reason": {func(p *v1.Pod) {
			p.Status.Phase = v1.PodFailed
			p.Status.ContainerStatuses = []v1.ContainerStatus{terminated("c", 3, "")}
		}, "ExitCode:3", "0/1", 0},
		"init waiting": {func(p *v1.Pod) {
			p.Spec.InitContainers = twoInits
			p.Status.Phase = v1.PodPending
			p.Status.InitContainerStatuses = []v1.ContainerStatus{terminated("i1", 0, "Completed"), {Name: "i2", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
			p.Status.ContainerStatuses = []v1.ContainerStatus{waiting("c", "PodInitializing")}
		}, "Init:1/2", "0/1", 0},
		"init crash loop": {func(p *v1.Pod) {
			p.Spec.InitContainers = twoInits[:1]
			p.Status.Phase = v1.PodPending
			st := waiting("i1", "CrashLoopBackOff")
			st.RestartCount = 2
			p.Status.InitContainerStatuses = []v1.ContainerStatus{st}
		}, "Init:CrashLoopBackOff", "0/1", 2},
		"init failed": {func(p *v1.Pod) {
			p.Spec.InitContainers = twoInits[:1]
			p.Status.Phase = v1.PodFailed
			p.Status.InitContainerStatuses = []v1.ContainerStatus{terminated("i1", 2, "Error")}
		}, "Init:Error", "0/1", 0},
		"terminating": {func(p *v1.Pod) {
			p.Status.Phase = v1.PodRunning
			p.DeletionTimestamp = &metav1.Time{Time: now}
			p.Status.ContainerStatuses = []v1.ContainerStatus{runningReady("c")}
		}, "Terminating", "1/1", 0},
		"sidecar counted": {func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "side", RestartPolicy: ptr(v1.ContainerRestartPolicyAlways)}}
			p.Status.Phase = v1.PodRunning
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodInitialized, Status: v1.ConditionTrue}}
			p.Status.InitContainerStatuses = []v1.ContainerStatus{runningReady("side")}
			p.Status.ContainerStatuses = []v1.ContainerStatus{runningReady("c")}
		}, "Running", "2/2", 0},
		"scheduling gated": {func(p *v1.Pod) {
			p.Status.Phase = v1.PodPending
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonSchedulingGated}}
		}, "SchedulingGated", "0/1", 0},
	} {
		t.Run(name, func(t *testing.T) {
			p := newPod()
			tc.pod(p)
			tbl, err := Table.ConvertToTable(context.Background(), p, nil)
			if err != nil {
				t.Fatal(err)
			}
			cells := tbl.Rows[0].Cells
			if cells[2] != tc.status || cells[1] != tc.ready {
				t.Errorf("READY/STATUS = %v/%v, want %v/%v", cells[1], cells[2], tc.ready, tc.status)
			}
			if s := Summarize(p); s.Restarts != tc.restarts {
				t.Errorf("restarts = %d, want %d", s.Restarts, tc.restarts)
			}
		})
	}
}

func TestPodTableColumnsAndWideCells(t *testing.T) {
	p := newPod()
	p.CreationTimestamp = metav1.Time{Time: now.Add(-90 * time.Second)}
	p.Spec.NodeName = "n1"
	p.Status.Phase = v1.PodRunning
	p.Status.PodIPs = []v1.PodIP{{IP: "10.1.0.4"}}
	st := runningReady("c")
	st.RestartCount = 2
	st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{FinishedAt: metav1.Time{Time: now.Add(-30 * time.Second)}}
	p.Status.ContainerStatuses = []v1.ContainerStatus{st}
	tbl := Table
	tbl.Now = func() time.Time { return now }
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "c"}, Items: []v1.Pod{*p}}
	out, err := tbl.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range out.ColumnDefinitions {
		if c.Priority == 0 {
			names = append(names, c.Name)
		}
	}
	if got := names; len(got) != 5 || got[0] != "Name" || got[1] != "Ready" || got[2] != "Status" || got[3] != "Restarts" || got[4] != "Age" {
		t.Errorf("default columns = %v", got)
	}
	want := []interface{}{"p", "1/1", "Running", "2 (30s ago)", "90s", "10.1.0.4", "n1", "<none>", "<none>"}
	for i, w := range want {
		if out.Rows[0].Cells[i] != w {
			t.Errorf("cell %d (%s) = %v, want %v", i, out.ColumnDefinitions[i].Name, out.Rows[0].Cells[i], w)
		}
	}
	if out.ResourceVersion != "42" || out.Continue != "c" {
		t.Errorf("list metadata not carried: %+v", out.ListMeta)
	}
	if out.Rows[0].Object.Object != &list.Items[0] {
		t.Errorf("row object is not the list item")
	}
	noHeaders, _ := tbl.ConvertToTable(context.Background(), p, &metav1.TableOptions{NoHeaders: true})
	if noHeaders.ColumnDefinitions != nil {
		t.Errorf("NoHeaders still returned column definitions")
	}
}
