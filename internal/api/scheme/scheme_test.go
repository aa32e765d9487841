package scheme

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSchemeRegistersServedKinds(t *testing.T) {
	s := New()
	for _, gvk := range []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("Pod"),
		corev1.SchemeGroupVersion.WithKind("Binding"),
		appsv1.SchemeGroupVersion.WithKind("Deployment"),
		{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"},
		{Group: "events.k8s.io", Version: "v1", Kind: "Event"},
		{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"},
		{Group: "storage.k8s.io", Version: "v1", Kind: "CSINode"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
		{Group: "policy", Version: "v1", Kind: "Eviction"},
		{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenReview"},
		{Group: "authorization.k8s.io", Version: "v1", Kind: "SubjectAccessReview"},
		{Group: "meta.k8s.io", Version: "v1", Kind: "Table"},
		{Group: "meta.k8s.io", Version: "v1beta1", Kind: "Table"},
		corev1.SchemeGroupVersion.WithKind("ListOptions"),
		corev1.SchemeGroupVersion.WithKind("DeleteOptions"),
		corev1.SchemeGroupVersion.WithKind("WatchEvent"),
		{Version: "v1", Kind: "Status"},
	} {
		if !s.Recognizes(gvk) {
			t.Errorf("scheme does not recognise %v", gvk)
		}
	}
}

func TestSchemeDefaultAppliesBerthDefaults(t *testing.T) {
	s := New()
	d := &appsv1.Deployment{}
	s.Default(d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("Default(deployment) did not apply defaults: %+v", d.Spec)
	}
	list := &corev1.PodList{Items: []corev1.Pod{{}}}
	s.Default(list)
	if list.Items[0].Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Fatalf("Default(PodList) did not default items")
	}
}

func TestFieldLabelConversions(t *testing.T) {
	s := New()
	pod := corev1.SchemeGroupVersion.WithKind("Pod")
	for _, label := range []string{"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase", "status.podIP", "spec.schedulerName"} {
		if _, _, err := s.ConvertFieldLabel(pod, label, "x"); err != nil {
			t.Errorf("pod field label %q rejected: %v", label, err)
		}
	}
	if _, _, err := s.ConvertFieldLabel(pod, "spec.containers", "x"); err == nil {
		t.Errorf("unsupported pod field label accepted")
	}
	if _, _, err := s.ConvertFieldLabel(corev1.SchemeGroupVersion.WithKind("Event"), "involvedObject.name", "x"); err != nil {
		t.Errorf("event field label rejected: %v", err)
	}
	ev := eventsv1.SchemeGroupVersion.WithKind("Event")
	if label, _, err := s.ConvertFieldLabel(ev, "regarding.name", "x"); err != nil || label != "involvedObject.name" {
		t.Errorf("events.k8s.io regarding.name → %q, %v", label, err)
	}
	if _, _, err := s.ConvertFieldLabel(ev, "involvedObject.name", "x"); err == nil {
		t.Errorf("events.k8s.io accepted the core/v1 label involvedObject.name")
	}
	if _, _, err := s.ConvertFieldLabel(corev1.SchemeGroupVersion.WithKind("Node"), "spec.unschedulable", "true"); err != nil {
		t.Errorf("node field label rejected: %v", err)
	}
}

func TestCodecsRoundTripJSONYAMLProtobuf(t *testing.T) {
	s := New()
	codecs := Codecs(s)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}}
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf} {
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
		if !ok {
			t.Fatalf("no serializer for %s", mediaType)
		}
		enc := codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
		data, err := runtime.Encode(enc, pod)
		if err != nil {
			t.Fatalf("%s encode: %v", mediaType, err)
		}
		obj, err := runtime.Decode(codecs.UniversalDecoder(corev1.SchemeGroupVersion), data)
		if err != nil {
			t.Fatalf("%s decode: %v", mediaType, err)
		}
		got := obj.(*corev1.Pod)
		if got.Name != "p" || got.Spec.Containers[0].Image != "busybox:1" || got.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			t.Errorf("%s round trip lost data or defaults: %+v", mediaType, got)
		}
	}
}

func TestSchemeConvertsEvents(t *testing.T) {
	s := New()
	core := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, InvolvedObject: corev1.ObjectReference{Name: "p"}, Message: "m"}
	out := &eventsv1.Event{}
	if err := s.Convert(core, out, nil); err != nil {
		t.Fatal(err)
	}
	if out.Regarding.Name != "p" || out.Note != "m" {
		t.Fatalf("converted = %+v", out)
	}
	back := &corev1.Event{}
	if err := s.Convert(out, back, nil); err != nil || back.Message != "m" || back.InvolvedObject.Name != "p" {
		t.Fatalf("converted back = %+v, %v", back, err)
	}
}
