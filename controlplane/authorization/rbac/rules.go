package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// RuleAllows reports whether one PolicyRule grants the request described by
// attrs: a resource request needs verb, API group, resource (with subresource
// joined as "resource/subresource") and resourceName to match; a non-resource
// request needs verb and URL to match.
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if attrs.IsResourceRequest() {
		combined := attrs.GetResource()
		if sub := attrs.GetSubresource(); sub != "" {
			combined += "/" + sub
		}
		return VerbMatches(rule, attrs.GetVerb()) &&
			APIGroupMatches(rule, attrs.GetAPIGroup()) &&
			ResourceMatches(rule, combined, attrs.GetSubresource()) &&
			ResourceNameMatches(rule, attrs.GetName())
	}
	return VerbMatches(rule, attrs.GetVerb()) && NonResourceURLMatches(rule, attrs.GetPath())
}

// RulesAllow reports whether any of rules grants the request.
func RulesAllow(attrs authorizer.Attributes, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(attrs, &rules[i]) {
			return true
		}
	}
	return false
}

// VerbMatches reports whether the rule lists the verb or "*".
func VerbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

// APIGroupMatches reports whether the rule lists the API group or "*".
func APIGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// ResourceMatches reports whether the rule covers the combined resource
// ("pods" or "pods/log"): "*" covers everything, an exact entry covers
// itself, and "*/sub" covers subresource sub of every resource.
func ResourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		switch {
		case r == rbacv1.ResourceAll, r == combined:
			return true
		case subresource != "" && r == "*/"+subresource:
			return true
		}
	}
	return false
}

// ResourceNameMatches reports whether the rule covers the object name: a rule
// without resourceNames covers every name; otherwise the name must be listed.
func ResourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

// NonResourceURLMatches reports whether the rule covers the path: "*" covers
// every path, an entry ending in "*" covers every path with that prefix, any
// other entry only itself.
func NonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		switch {
		case u == rbacv1.NonResourceAll, u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")):
			return true
		}
	}
	return false
}
