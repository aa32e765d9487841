package rbac_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
