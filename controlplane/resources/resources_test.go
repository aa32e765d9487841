package resources

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
