package replicaset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestReplicationControllerSeenAsReplicaSet(t *testing.T) {
	n := int32(3)
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "rc-uid", Generation: 4, ResourceVersion: "9"},
		Spec: corev1.ReplicationControllerSpec{Replicas: &n, MinReadySeconds: 5, Selector: map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}}}},
		Status: corev1.ReplicationControllerStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 3,
			Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: ReasonFailedCreate}}},
	}
	rs := ReplicaSetFromRC(rc)
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set{"app": "web"}) || sel.Matches(labels.Set{"app": "db"}) {
		t.Fatalf("selector %v (%v)", rs.Spec.Selector, err)
	}
	if *rs.Spec.Replicas != 3 || rs.UID != "rc-uid" || rs.Status.ReadyReplicas != 1 || rs.Status.Conditions[0].Reason != ReasonFailedCreate {
		t.Fatalf("converted %+v", rs)
	}
	rs.Spec.Template.Labels["x"] = "y"
	if _, shared := rc.Spec.Template.Labels["x"]; shared {
		t.Fatal("the ReplicaSet shares the controller's template")
	}
	delete(rs.Spec.Template.Labels, "x")
	if back := RCFromReplicaSet(rs); !equality.Semantic.DeepEqual(back, rc) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, rc)
	}
	pod := PodFromTemplate(rs, corev1.SchemeGroupVersion.WithKind("ReplicationController"))
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.UID != "rc-uid" {
		t.Fatalf("pod controller %+v", ref)
	}
}
