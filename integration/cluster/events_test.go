package cluster

import (
	"context"
	"strings"
	"testing"

	"berth/integration/harness"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
)

// TestEventRecorders: client-go's core/v1 recorder (the controllers') and
// events.k8s.io/v1 recorder (the scheduler's) both write, repeats included
// (the core recorder PATCHes the count, the events recorder a series), and
// kubectl shows both in get events and describe pod.
func TestEventRecorders(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := shared.Client(t)
	ns := newNamespace(t, c)
	pod, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		// Another scheduler's pod: berth's leaves it (and its events) alone.
		Spec: corev1.PodSpec{SchedulerName: "elsewhere", Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/x:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	core := record.NewBroadcaster(record.WithContext(ctx))
	core.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.CoreV1().Events("")})
	defer core.Shutdown()
	coreRec := core.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "core-recorder"})
	for range 3 {
		coreRec.Event(pod, corev1.EventTypeNormal, "CoreReason", "from the core recorder")
	}

	ev := events.NewBroadcaster(&events.EventSinkImpl{Interface: c.EventsV1()})
	ev.StartRecordingToSink(ctx.Done())
	defer ev.Shutdown()
	evRec := ev.NewRecorder(scheme.Scheme, "events-recorder")
	for range 3 {
		evRec.Eventf(pod, nil, corev1.EventTypeWarning, "NewReason", "Doing", "from the %s recorder", "events")
	}

	// The core recorder PATCHes the repeats' count; the events recorder
	// PATCHes a series on the first repeat (creating the event if the
	// patch finds none).
	harness.Eventually(t, "the core event counted 3 times, the new one a series of 2", func() (bool, error) {
		l, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var coreCount, series int32
		for _, e := range l.Items {
			switch {
			case e.Reason == "CoreReason":
				coreCount = max(coreCount, e.Count)
			case e.Reason == "NewReason" && e.Series != nil:
				series = max(series, e.Series.Count)
			}
		}
		return coreCount == 3 && series == 2, nil
	})
	out := shared.mustKubectl(t, "", "-n", ns, "get", "events")
	for _, want := range []string{"CoreReason", "NewReason", "from the core recorder", "from the events recorder"} {
		if !strings.Contains(out, want) {
			t.Fatalf("kubectl get events lacks %q:\n%s", want, out)
		}
	}
	out = shared.mustKubectl(t, "", "-n", ns, "describe", "pod", "p")
	for _, want := range []string{"CoreReason", "NewReason", "from the core recorder", "from the events recorder"} {
		if !strings.Contains(out, want) {
			t.Fatalf("kubectl describe pod lacks %q:\n%s", want, out)
		}
	}
}
