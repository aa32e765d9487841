package convert

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEventRoundTrip(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		EventTime:  metav1.MicroTime{Time: now}, ReportingController: "rc", ReportingInstance: "ri", Action: "Act", Reason: "R",
		Regarding: corev1.ObjectReference{Kind: "Pod", Name: "p"}, Related: &corev1.ObjectReference{Kind: "Node", Name: "n"},
		Note: "note", Type: "Warning", Series: &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.MicroTime{Time: now}},
		DeprecatedSource: corev1.EventSource{Component: "c", Host: "h"}, DeprecatedFirstTimestamp: metav1.Time{Time: now}, DeprecatedCount: 4,
	}
	core := EventToCore(e)
	if core.InvolvedObject.Name != "p" || core.Message != "note" || core.Count != 4 || core.Source.Host != "h" || core.Series.Count != 3 {
		t.Fatalf("EventToCore = %+v", core)
	}
	core.Labels["a"] = "changed"
	if e.Labels["a"] != "b" {
		t.Fatal("EventToCore shares memory with its input")
	}
	core.Labels["a"] = "b"
	back := EventFromCore(core)
	if !equality.Semantic.DeepEqual(back, e) {
		t.Fatalf("round trip changed the event:\n%+v\n%+v", back, e)
	}
}
