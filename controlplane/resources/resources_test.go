package resources

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestContainerFor(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "a"}, {Name: "b"}},
	}}
	if _, err := containerFor(pod, ""); err == nil {
		t.Fatal("two containers and none named: no error")
	}
	if c, err := containerFor(pod, "init"); err != nil || c != "init" {
		t.Fatalf("init container: %q %v", c, err)
	}
	if _, err := containerFor(pod, "zzz"); err == nil {
		t.Fatal("unknown container accepted")
	}
	pod.Annotations = map[string]string{defaultContainerAnnotation: "b"}
	if c, err := containerFor(pod, ""); err != nil || c != "b" {
		t.Fatalf("default-container annotation: %q %v", c, err)
	}
}

func TestScaleFromReplicaSet(t *testing.T) {
	s := &scaleREST{adapter: replicaSetScale}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", ResourceVersion: "7"},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}},
		Status:     appsv1.ReplicaSetStatus{Replicas: 2},
	}
	sc, err := s.toScale(rs)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Replicas != 3 || sc.Status.Replicas != 2 || sc.Status.Selector != "app=x" || sc.ResourceVersion != "7" || sc.Name != "r" {
		t.Fatalf("scale %+v", sc)
	}
}

func TestEventsConversionRoundTrip(t *testing.T) {
	now := metav1.NewMicroTime(time.Unix(1700000000, 0))
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: "ns", ResourceVersion: "5"},
		EventTime:           now,
		Series:              &eventsv1.EventSeries{Count: 2, LastObservedTime: now},
		ReportingController: "c", ReportingInstance: "i", Action: "A", Reason: "R", Note: "n", Type: "Normal",
		Regarding:        corev1.ObjectReference{Kind: "Pod", Name: "p"},
		Related:          &corev1.ObjectReference{Kind: "Node", Name: "x"},
		DeprecatedSource: corev1.EventSource{Component: "s"}, DeprecatedCount: 4,
	}
	core := toCoreEvent(ev)
	if core.Message != "n" || core.InvolvedObject.Name != "p" || core.Series.Count != 2 || core.Count != 4 || core.Source.Component != "s" {
		t.Fatalf("to core: %+v", core)
	}
	back, err := toEventsV1(core)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(back, ev) {
		t.Fatalf("round trip changed the event:\n%+v\n%+v", back, ev)
	}
	if _, err := toEventsV1(&corev1.Pod{}); err == nil {
		t.Fatal("converting a pod: no error")
	}
}
