package clusterroleaggregation_test

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"berth/controlplane/controller"
	"berth/controlplane/controller/clusterroleaggregation"
)

// clusterRole is a ClusterRole with labels and rules, aggregating the
// roles labelled aggregateLabel=true unless aggregateLabel is empty.
func clusterRole(name string, labels map[string]string, aggregateLabel string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
	if aggregateLabel != "" {
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{aggregateLabel: "true"}}}}
	}
	return r
}

var (
	getPods  = rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	listSvcs = rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"services"}}
)

func TestAggregationController(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		clusterRole("view", nil, "aggregate-to-view"),
		clusterRole("pods-reader", map[string]string{"aggregate-to-view": "true"}, "", getPods),
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := clusterroleaggregation.New(clusterroleaggregation.Config{Config: controller.Config{Client: client, Informers: factory}})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	})

	waitRules := func(want []rbacv1.PolicyRule) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, err := client.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
			if err == nil && apiequality.Semantic.DeepEqual(r.Rules, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("view rules = %v, want %v", r.Rules, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitRules([]rbacv1.PolicyRule{getPods})

	// A new labelled role is aggregated in.
	if _, err := client.RbacV1().ClusterRoles().Create(ctx,
		clusterRole("svc-lister", map[string]string{"aggregate-to-view": "true"}, "", listSvcs), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules([]rbacv1.PolicyRule{getPods, listSvcs})

	// Removing the label takes its rules out again.
	r, err := client.RbacV1().ClusterRoles().Get(ctx, "pods-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.Labels = nil
	if _, err := client.RbacV1().ClusterRoles().Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules([]rbacv1.PolicyRule{listSvcs})
}
