package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateRBACName checks an RBAC object name: any path segment (no "/",
// "%", and not "." or "..").
func ValidateRBACName(name string, prefix bool) []string {
	return path.IsValidPathSegmentName(name)
}

// ValidateRole validates a namespaced role's rules.
func ValidateRole(r *rbacv1.Role) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&r.ObjectMeta, true, ValidateRBACName, metadataPath)
	for i, rule := range r.Rules {
		errs = append(errs, validatePolicyRule(rule, true, field.NewPath("rules").Index(i))...)
	}
	return errs
}

// ValidateRoleUpdate validates a role update.
func ValidateRoleUpdate(newR, oldR *rbacv1.Role) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newR.ObjectMeta, &oldR.ObjectMeta, metadataPath)
	return append(errs, ValidateRole(newR)...)
}

// ValidateClusterRole validates a cluster role's rules and aggregation rule.
func ValidateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&r.ObjectMeta, false, ValidateRBACName, metadataPath)
	for i, rule := range r.Rules {
		errs = append(errs, validatePolicyRule(rule, false, field.NewPath("rules").Index(i))...)
	}
	if r.AggregationRule != nil {
		p := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i, sel := range r.AggregationRule.ClusterRoleSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&sel, metav1validation.LabelSelectorValidationOptions{}, p.Index(i))...)
		}
	}
	return errs
}

// ValidateClusterRoleUpdate validates a cluster role update.
func ValidateClusterRoleUpdate(newR, oldR *rbacv1.ClusterRole) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newR.ObjectMeta, &oldR.ObjectMeta, metadataPath)
	return append(errs, ValidateClusterRole(newR)...)
}

func validatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// ValidateRoleBinding validates a role binding: a roleRef to a Role or
// ClusterRole in rbac.authorization.k8s.io with a valid name, and valid
// subjects.
func ValidateRoleBinding(rb *rbacv1.RoleBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&rb.ObjectMeta, true, ValidateRBACName, metadataPath)
	errs = append(errs, validateRoleRef(rb.RoleRef, []string{"Role", "ClusterRole"})...)
	for i, s := range rb.Subjects {
		errs = append(errs, validateSubject(s, true, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// ValidateRoleBindingUpdate: the roleRef cannot change.
func ValidateRoleBindingUpdate(newRB, oldRB *rbacv1.RoleBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newRB.ObjectMeta, &oldRB.ObjectMeta, metadataPath)
	errs = append(errs, ValidateRoleBinding(newRB)...)
	if newRB.RoleRef != oldRB.RoleRef {
		errs = append(errs, field.Invalid(field.NewPath("roleRef"), newRB.RoleRef, "cannot change roleRef"))
	}
	return errs
}

// ValidateClusterRoleBinding validates a cluster role binding: a roleRef to
// a ClusterRole and valid subjects (service accounts need a namespace).
func ValidateClusterRoleBinding(crb *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&crb.ObjectMeta, false, ValidateRBACName, metadataPath)
	errs = append(errs, validateRoleRef(crb.RoleRef, []string{"ClusterRole"})...)
	for i, s := range crb.Subjects {
		errs = append(errs, validateSubject(s, false, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// ValidateClusterRoleBindingUpdate: the roleRef cannot change.
func ValidateClusterRoleBindingUpdate(newB, oldB *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newB.ObjectMeta, &oldB.ObjectMeta, metadataPath)
	errs = append(errs, ValidateClusterRoleBinding(newB)...)
	if newB.RoleRef != oldB.RoleRef {
		errs = append(errs, field.Invalid(field.NewPath("roleRef"), newB.RoleRef, "cannot change roleRef"))
	}
	return errs
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	ok := false
	for _, k := range kinds {
		ok = ok || ref.Kind == k
	}
	if !ok {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range ValidateRBACName(ref.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

func validateSubject(s rbacv1.Subject, namespaced bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range DNSSubdomainName(s.Name, false) {
				errs = append(errs, field.Invalid(fldPath.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(fldPath.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}
