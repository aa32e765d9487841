package rbac

import (
	"fmt"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"berth/internal/errdefs"
)

// AggregatedRules computes the rules an aggregated ClusterRole must hold: the
// rules of every other ClusterRole matched by one of its aggregationRule's
// clusterRoleSelectors, in ClusterRole name order, each rule once. A role
// without an aggregationRule gets nil.
func AggregatedRules(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	if role.AggregationRule == nil {
		return nil, nil
	}
	sorted := append([]*rbacv1.ClusterRole(nil), all...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var rules []rbacv1.PolicyRule
	seen := map[string]bool{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterrole %q: aggregationRule.clusterRoleSelectors[%d]: %v: %w", role.Name, i, err, errdefs.ErrInvalidArgument)
		}
		for _, other := range sorted {
			if other.Name == role.Name || seen[other.Name] || !sel.Matches(labels.Set(other.Labels)) {
				continue
			}
			seen[other.Name] = true
			for _, r := range other.Rules {
				if !containsRule(rules, r) {
					rules = append(rules, *r.DeepCopy())
				}
			}
		}
	}
	return rules, nil
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for i := range rules {
		if apiequality.Semantic.DeepEqual(rules[i], r) {
			return true
		}
	}
	return false
}
