package resourcequota_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"berth/controlplane/admission/quota"
	"berth/controlplane/controller"
	"berth/controlplane/controller/resourcequota"
)

func TestControllerRecomputesUsage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	client := fake.NewClientset(
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("10"), "requests.cpu": resource.MustParse("2"),
				"configmaps": resource.MustParse("5"), "count/deployments.apps": resource.MustParse("3")}}},
		pod("a", corev1.PodRunning), pod("b", corev1.PodPending), pod("done", corev1.PodSucceeded),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "c2"}},
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := resourcequota.New(resourcequota.Config{Config: controller.Config{Client: client, Informers: factory}, ResyncPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		factory.Shutdown()
	})
	waitUsed := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			q, err := client.CoreV1().ResourceQuotas("ns").Get(ctx, "q", metav1.GetOptions{})
			if err == nil && quota.PrettyPrint(q.Status.Used) == want {
				if quota.PrettyPrint(q.Status.Hard) != quota.PrettyPrint(q.Spec.Hard) {
					t.Fatalf("status.hard %v", q.Status.Hard)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("used %s, want %s", quota.PrettyPrint(q.Status.Used), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitUsed("configmaps=1,count/deployments.apps=0,pods=2,requests.cpu=200m")
	if err := client.CoreV1().Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed("configmaps=1,count/deployments.apps=0,pods=1,requests.cpu=100m")
	// A pod that finishes stops counting.
	b := pod("b", corev1.PodFailed)
	if _, err := client.CoreV1().Pods("ns").UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed("configmaps=1,count/deployments.apps=0,pods=0,requests.cpu=0")
}
