package event

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"berth/internal/api/scheme"
)

func TestEventTableAndSelectors(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default", FieldPath: "spec.containers{app}"},
		Reason:         "BackOff", Message: " Back-off restarting failed container \n", Type: v1.EventTypeWarning,
		Source:         v1.EventSource{Component: "kubelet", Host: "n1"},
		FirstTimestamp: metav1.Time{Time: now.Add(-10 * time.Minute)}, LastTimestamp: metav1.Time{Time: now.Add(-30 * time.Second)}, Count: 7,
	}
	tbl := Kind.Table
	tbl.Now = func() time.Time { return now }
	out, err := tbl.ConvertToTable(context.Background(), e, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []interface{}{"30s", "Warning", "BackOff", "pod/web", "spec.containers{app}", "kubelet, n1", "Back-off restarting failed container", "10m", int64(7), "web.1"}
	for i, w := range want {
		if out.Rows[0].Cells[i] != w {
			t.Errorf("%s = %#v, want %#v", out.ColumnDefinitions[i].Name, out.Rows[0].Cells[i], w)
		}
	}
	single := &v1.Event{EventTime: metav1.MicroTime{Time: now.Add(-time.Minute)}, ReportingController: "berth.dev/agent", InvolvedObject: v1.ObjectReference{Kind: "Node"}}
	cells := Row(single, now)
	if cells[0] != "60s" || cells[3] != "node" || cells[5] != "berth.dev/agent" || cells[8] != int64(1) {
		t.Errorf("new-style singleton event cells = %v", cells)
	}
	pred := Kind.Predicate(labels.Everything(), fields.ParseSelectorOrDie("involvedObject.kind=Pod,involvedObject.name=web,reason=BackOff,type=Warning,source=kubelet"))
	if ok, err := pred.Matches(e); !ok || err != nil {
		t.Errorf("event selector did not match: %v %v", ok, err)
	}
	if !Kind.Strategy(scheme.New()).AllowCreateOnUpdate(context.Background()) {
		t.Error("events allow create on update upstream")
	}
}
