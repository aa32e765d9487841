package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestEventsBothAPIs: events.k8s.io/v1 and core/v1 serve the same events
// (as upstream), so what the scheduler writes with the new API shows in
// kubectl describe.
func TestEventsBothAPIs(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, shared)
	cs := shared.Client(t)
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, testPod("evpod"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.EventsV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "evpod.1", Namespace: ns},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "berth.io/test", ReportingInstance: "test-1",
		Action: "Scheduling", Reason: "Scheduled", Type: corev1.EventTypeNormal,
		Note:      "Successfully assigned the pod",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "evpod", UID: pod.UID, APIVersion: "v1"},
	}
	if _, err := cs.EventsV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	core, err := cs.CoreV1().Events(ns).Get(ctx, "evpod.1", metav1.GetOptions{})
	if err != nil || core.Message != ev.Note || core.InvolvedObject.Name != "evpod" || core.ReportingController != "berth.io/test" {
		t.Fatalf("core/v1 view: %v %+v", err, core)
	}
	sel, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=evpod,involvedObject.uid=" + string(pod.UID)})
	if err != nil || len(sel.Items) != 1 {
		t.Fatalf("events by involvedObject: %v %d", err, len(sel.Items))
	}
	if e := nextEvent(t, w); e.Type != watch.Added || e.Object.(*eventsv1.Event).Note != ev.Note {
		t.Fatalf("events.k8s.io watch: %s %+v", e.Type, e.Object)
	}
	// An update through core/v1 is seen through events.k8s.io.
	core.Count = 3
	if _, err := cs.CoreV1().Events(ns).Update(ctx, core, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, w); e.Type != watch.Modified || e.Object.(*eventsv1.Event).DeprecatedCount != 3 {
		t.Fatalf("events.k8s.io watch after core update: %s %+v", e.Type, e.Object)
	}
	// An events.k8s.io update without a resourceVersion (unconditional, as
	// upstream allows for events; the Events API conformance spec does it).
	uncond, err := cs.EventsV1().Events(ns).Get(ctx, "evpod.1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uncond.ResourceVersion = ""
	uncond.Note = "updated without a resourceVersion"
	if _, err := cs.EventsV1().Events(ns).Update(ctx, uncond, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("unconditional events.k8s.io update: %v", err)
	}
	if e := nextEvent(t, w); e.Type != watch.Modified || e.Object.(*eventsv1.Event).Note != uncond.Note {
		t.Fatalf("events.k8s.io watch after the unconditional update: %s %+v", e.Type, e.Object)
	}
	out := shared.mustKubectl(t, "1.32", "", "-n", ns, "describe", "pod", "evpod")
	if !strings.Contains(out, "updated without a resourceVersion") {
		t.Fatalf("kubectl describe does not show the event:\n%s", out)
	}
}
