package node

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/internal/api/scheme"
)

func TestNodeTable(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.Time{Time: now.Add(-2 * time.Hour)},
			Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "", "kubernetes.io/role": "edge"}},
		Spec: v1.NodeSpec{Unschedulable: true},
		Status: v1.NodeStatus{
			Conditions: []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse}, {Type: v1.NodeReady, Status: v1.ConditionTrue}},
			Addresses:  []v1.NodeAddress{{Type: v1.NodeHostName, Address: "n1"}, {Type: v1.NodeInternalIP, Address: "10.0.0.5"}},
			NodeInfo:   v1.NodeSystemInfo{KubeletVersion: "v1.37.2-berth", OSImage: "Debian GNU/Linux 12", KernelVersion: "6.1.0", ContainerRuntimeVersion: "containerd://1.6.20"},
		},
	}
	tbl := Kind.Table
	tbl.Now = func() time.Time { return now }
	out, err := tbl.ConvertToTable(context.Background(), n, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []interface{}{"n1", "Ready,SchedulingDisabled", "control-plane,edge,worker", "120m", "v1.37.2-berth", "10.0.0.5", "<none>", "Debian GNU/Linux 12", "6.1.0", "containerd://1.6.20"}
	for i, w := range want {
		if out.Rows[0].Cells[i] != w {
			t.Errorf("%s = %v, want %v", out.ColumnDefinitions[i].Name, out.Rows[0].Cells[i], w)
		}
	}
	for _, tc := range []struct {
		conds []v1.NodeCondition
		want  string
	}{
		{nil, "Unknown"},
		{[]v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}, "NotReady"},
		{[]v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown}}, "NotReady"},
	} {
		if got := Status(&v1.Node{Status: v1.NodeStatus{Conditions: tc.conds}}); got != tc.want {
			t.Errorf("Status(%v) = %q, want %q", tc.conds, got, tc.want)
		}
	}
	if got := Roles(&v1.Node{}); got != "<none>" {
		t.Errorf("Roles(no labels) = %q", got)
	}
}

func TestNodeStrategies(t *testing.T) {
	s := Kind.Strategy(scheme.New())
	n := &v1.Node{Spec: v1.NodeSpec{PodCIDR: "10.1.0.0/24"}}
	s.PrepareForCreate(context.Background(), n)
	if len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != "10.1.0.0/24" {
		t.Errorf("podCIDRs not filled from podCIDR: %v", n.Spec.PodCIDRs)
	}
	old := &v1.Node{Status: v1.NodeStatus{Phase: v1.NodeRunning}}
	upd := &v1.Node{Spec: v1.NodeSpec{PodCIDRs: []string{"10.2.0.0/24"}}, Status: v1.NodeStatus{Phase: v1.NodeTerminated}}
	s.PrepareForUpdate(context.Background(), upd, old)
	if upd.Status.Phase != v1.NodeRunning || upd.Spec.PodCIDR != "10.2.0.0/24" {
		t.Errorf("update: status %v podCIDR %q", upd.Status.Phase, upd.Spec.PodCIDR)
	}
	if s.NamespaceScoped() {
		t.Error("nodes are cluster-scoped")
	}
}

func TestNodeRegistersWithItsStatus(t *testing.T) {
	n := &v1.Node{Status: v1.NodeStatus{Phase: v1.NodeRunning}}
	Kind.Strategy(scheme.New()).PrepareForCreate(context.Background(), n)
	if n.Status.Phase != v1.NodeRunning {
		t.Errorf("create cleared the status: %+v", n.Status)
	}
}
