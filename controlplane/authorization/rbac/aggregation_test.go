package rbac_test

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"berth/controlplane/authorization/rbac"
)

func labelled(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func aggregator(name, label string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{label: "true"}},
		}},
	}
}

var (
	getPods  = rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	listSvcs = rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"services"}}
	getCMs   = rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
)

func TestAggregatedRules(t *testing.T) {
	all := []*rbacv1.ClusterRole{
		labelled("b-role", map[string]string{"agg": "true"}, listSvcs, getPods),
		labelled("a-role", map[string]string{"agg": "true"}, getPods),
		labelled("unlabelled", nil, getCMs),
		labelled("other-value", map[string]string{"agg": "false"}, getCMs),
	}
	target := aggregator("target", "agg")
	all = append(all, target)
	got, err := rbac.AggregatedRules(target, all)
	if err != nil {
		t.Fatal(err)
	}
	// a-role first (name order); getPods once.
	want := []rbacv1.PolicyRule{getPods, listSvcs}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("AggregatedRules = %v, want %v", got, want)
	}
	if rules, err := rbac.AggregatedRules(labelled("plain", nil, getCMs), all); err != nil || rules != nil {
		t.Fatalf("non-aggregated role: %v %v", rules, err)
	}
	bad := aggregator("bad", "agg")
	bad.AggregationRule.ClusterRoleSelectors[0].MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Bogus"}}
	if _, err := rbac.AggregatedRules(bad, all); err == nil {
		t.Fatal("invalid selector accepted")
	}
}

func TestAggregationController(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		aggregator("view", "aggregate-to-view"),
		labelled("pods-reader", map[string]string{"aggregate-to-view": "true"}, getPods),
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := rbac.NewAggregationController(rbac.AggregationConfig{Client: client, ClusterRoles: factory.Rbac().V1().ClusterRoles()})
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
		labelled("svc-lister", map[string]string{"aggregate-to-view": "true"}, listSvcs), metav1.CreateOptions{}); err != nil {
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
