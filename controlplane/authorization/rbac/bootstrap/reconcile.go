package bootstrap

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/auth/rbac/validation"

	"berth/controlplane/authorization/rbac"
)

// Result counts what Reconcile did.
type Result struct {
	Created []string // "clusterrole/NAME" or "clusterrolebinding/NAME"
	Updated []string // existing objects that gained missing rules or subjects
}

// Reconcile makes the default policy present through client: it creates every
// missing default ClusterRole and ClusterRoleBinding, and for existing ones
// whose autoupdate annotation is not "false" it adds the rules, aggregation
// selectors or subjects they lack (never removing anything the cluster admin
// added). It is safe to run at every start, from several servers at once.
func Reconcile(ctx context.Context, client kubernetes.Interface) (Result, error) {
	var res Result
	roles := client.RbacV1().ClusterRoles()
	defaults, err := withAggregatedRules(ClusterRoles())
	if err != nil {
		return res, err
	}
	for _, want := range defaults {
		have, err := roles.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := roles.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return res, fmt.Errorf("bootstrap: create clusterrole %q: %w", want.Name, err)
			}
			res.Created = append(res.Created, "clusterrole/"+want.Name)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("bootstrap: get clusterrole %q: %w", want.Name, err)
		}
		if have.Annotations[AutoUpdateAnnotation] == "false" {
			continue
		}
		updated, changed := mergeRole(have, want)
		if !changed {
			continue
		}
		if _, err := roles.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return res, fmt.Errorf("bootstrap: update clusterrole %q: %w", want.Name, err)
		}
		res.Updated = append(res.Updated, "clusterrole/"+want.Name)
	}
	for _, want := range Roles() {
		roles := client.RbacV1().Roles(want.Namespace)
		have, err := roles.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := roles.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return res, fmt.Errorf("bootstrap: create role %s/%s: %w", want.Namespace, want.Name, err)
			}
			res.Created = append(res.Created, "role/"+want.Namespace+"/"+want.Name)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("bootstrap: get role %s/%s: %w", want.Namespace, want.Name, err)
		}
		if have.Annotations[AutoUpdateAnnotation] == "false" {
			continue
		}
		if covers, missing := validation.Covers(have.Rules, want.Rules); !covers {
			updated := have.DeepCopy()
			updated.Rules = append(updated.Rules, missing...)
			if _, err := roles.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
				return res, fmt.Errorf("bootstrap: update role %s/%s: %w", want.Namespace, want.Name, err)
			}
			res.Updated = append(res.Updated, "role/"+want.Namespace+"/"+want.Name)
		}
	}
	bindings := client.RbacV1().ClusterRoleBindings()
	for _, want := range ClusterRoleBindings() {
		have, err := bindings.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := bindings.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return res, fmt.Errorf("bootstrap: create clusterrolebinding %q: %w", want.Name, err)
			}
			res.Created = append(res.Created, "clusterrolebinding/"+want.Name)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("bootstrap: get clusterrolebinding %q: %w", want.Name, err)
		}
		if have.Annotations[AutoUpdateAnnotation] == "false" || have.RoleRef != want.RoleRef {
			// roleRef is immutable: a binding pointing elsewhere is the admin's choice.
			continue
		}
		updated := have.DeepCopy()
		changed := false
		for _, s := range want.Subjects {
			if !containsSubject(updated.Subjects, s) {
				updated.Subjects = append(updated.Subjects, s)
				changed = true
			}
		}
		if !changed {
			continue
		}
		if _, err := bindings.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return res, fmt.Errorf("bootstrap: update clusterrolebinding %q: %w", want.Name, err)
		}
		res.Updated = append(res.Updated, "clusterrolebinding/"+want.Name)
	}
	return res, nil
}

// withAggregatedRules fills the rules of the aggregated default roles
// (admin ⊇ edit ⊇ view), so that they are usable as soon as they are
// created, before the aggregation controller runs. mergeRole ignores them.
func withAggregatedRules(roles []*rbacv1.ClusterRole) ([]*rbacv1.ClusterRole, error) {
	// Aggregation nests at most as deep as there are roles; stop when stable.
	for range roles {
		changed := false
		for _, r := range roles {
			if r.AggregationRule == nil {
				continue
			}
			rules, err := rbac.AggregatedRules(r, roles)
			if err != nil {
				return nil, fmt.Errorf("bootstrap: aggregate clusterrole %q: %w", r.Name, err)
			}
			if len(rules) != len(r.Rules) {
				r.Rules, changed = rules, true
			}
		}
		if !changed {
			break
		}
	}
	return roles, nil
}

// mergeRole returns have plus what want has and have lacks: labels,
// annotations, uncovered rules (for non-aggregated roles) and aggregation
// selectors (for aggregated ones).
func mergeRole(have, want *rbacv1.ClusterRole) (*rbacv1.ClusterRole, bool) {
	out := have.DeepCopy()
	changed := false
	for k, val := range want.Labels {
		if _, ok := out.Labels[k]; !ok {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = val
			changed = true
		}
	}
	for k, val := range want.Annotations {
		if _, ok := out.Annotations[k]; !ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = val
			changed = true
		}
	}
	if want.AggregationRule != nil {
		if out.AggregationRule == nil {
			out.AggregationRule = &rbacv1.AggregationRule{}
		}
		for _, sel := range want.AggregationRule.ClusterRoleSelectors {
			found := false
			for _, s := range out.AggregationRule.ClusterRoleSelectors {
				if apiequality.Semantic.DeepEqual(s, sel) {
					found = true
					break
				}
			}
			if !found {
				out.AggregationRule.ClusterRoleSelectors = append(out.AggregationRule.ClusterRoleSelectors, sel)
				changed = true
			}
		}
		return out, changed
	}
	if covers, missing := validation.Covers(out.Rules, want.Rules); !covers {
		out.Rules = append(out.Rules, missing...)
		changed = true
	}
	return out, changed
}

func containsSubject(list []rbacv1.Subject, s rbacv1.Subject) bool {
	for _, x := range list {
		if x.Kind == s.Kind && x.Name == s.Name && x.Namespace == s.Namespace {
			return true
		}
	}
	return false
}
