package disruption

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"berth/controlplane/controller"
)

// TestSync: the executor finds the pods' controllers' scale (a
// Deployment through its ReplicaSet, a ReplicationController, each
// counted once), writes the planned status, and fails safe for a pod
// without a controller.
func TestSync(t *testing.T) {
	ctrl := func(kind, apiVersion, name string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, APIVersion: apiVersion, Name: name, UID: uid, Controller: ptr.To(true)}}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d1"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4)}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", UID: "rs1", OwnerReferences: ctrl("Deployment", "apps/v1", "web", "d1")},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}}
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "ns", UID: "rc1"}, Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2)}}
	pod := func(name string, owners []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}, OwnerReferences: owners},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	half := intstr.FromString("50%")
	budget := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &half, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	for _, tc := range []struct {
		name              string
		pods              []*corev1.Pod
		expected, allowed int32
		reason            string
	}{
		{name: "deployment and rc scale", pods: []*corev1.Pod{
			pod("a", ctrl("ReplicaSet", "apps/v1", "web-1", "rs1")), pod("b", ctrl("ReplicaSet", "apps/v1", "web-1", "rs1")),
			pod("c", ctrl("ReplicationController", "v1", "old", "rc1"))},
			// 4 + 2 expected, 3 may be unavailable: desired 3, healthy 3.
			expected: 6, allowed: 0, reason: policyv1.InsufficientPodsReason},
		{name: "a pod without a controller", pods: []*corev1.Pod{pod("a", ctrl("ReplicaSet", "apps/v1", "web-1", "rs1")), pod("bare", nil)},
			reason: policyv1.SyncFailedReason},
		{name: "a controller that is gone", pods: []*corev1.Pod{pod("a", ctrl("ReplicaSet", "apps/v1", "web-2", "rs2"))},
			reason: policyv1.SyncFailedReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{budget.DeepCopy()}
			client := fake.NewClientset(objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			c, err := New(Config{Config: controller.Config{Client: client, Informers: f}})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range []any{d, rs, rc} {
				var inf interface{ Add(any) error }
				switch o.(type) {
				case *appsv1.Deployment:
					inf = f.Apps().V1().Deployments().Informer().GetStore()
				case *appsv1.ReplicaSet:
					inf = f.Apps().V1().ReplicaSets().Informer().GetStore()
				default:
					inf = f.Core().V1().ReplicationControllers().Informer().GetStore()
				}
				if err := inf.Add(o); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range tc.pods {
				if err := f.Core().V1().Pods().Informer().GetStore().Add(p); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.Policy().V1().PodDisruptionBudgets().Informer().GetStore().Add(budget.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			if err := c.sync(context.Background(), "ns/b"); err != nil {
				t.Fatal(err)
			}
			got, err := client.PolicyV1().PodDisruptionBudgets("ns").Get(context.Background(), "b", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.ExpectedPods != tc.expected || got.Status.DisruptionsAllowed != tc.allowed {
				t.Errorf("expected %d allowed %d, want %d %d", got.Status.ExpectedPods, got.Status.DisruptionsAllowed, tc.expected, tc.allowed)
			}
			if cond := apimeta.FindStatusCondition(got.Status.Conditions, policyv1.DisruptionAllowedCondition); cond == nil || cond.Reason != tc.reason {
				t.Errorf("condition %+v, want reason %s", cond, tc.reason)
			}
		})
	}
}
