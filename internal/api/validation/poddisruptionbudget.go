package validation

import (
	policyv1 "k8s.io/api/policy/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// supportedUnhealthyPodEvictionPolicies are spec.unhealthyPodEvictionPolicy's values.
var supportedUnhealthyPodEvictionPolicies = []policyv1.UnhealthyPodEvictionPolicyType{policyv1.AlwaysAllow, policyv1.IfHealthyBudget}

// ValidatePodDisruptionBudget validates a policy/v1 PodDisruptionBudget as
// upstream: minAvailable and maxUnavailable not both set, each a
// non-negative integer or a percentage of at most 100%, a valid selector
// and a supported unhealthyPodEvictionPolicy.
func ValidatePodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&pdb.ObjectMeta, true, DNSSubdomainName, metadataPath)
	spec, p := pdb.Spec, field.NewPath("spec")
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(p, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	for _, v := range []struct {
		name string
		val  *intstr.IntOrString
	}{{"minAvailable", spec.MinAvailable}, {"maxUnavailable", spec.MaxUnavailable}} {
		if v.val == nil {
			continue
		}
		errs = append(errs, validatePositiveIntOrPercent(v.val, p.Child(v.name))...)
		if n, isPercent := percentValue(v.val); isPercent && n > 100 {
			errs = append(errs, field.Invalid(p.Child(v.name), v.val, "must not be greater than 100%"))
		}
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	if pol := spec.UnhealthyPodEvictionPolicy; pol != nil {
		ok := false
		for _, s := range supportedUnhealthyPodEvictionPolicies {
			ok = ok || *pol == s
		}
		if !ok {
			errs = append(errs, field.NotSupported(p.Child("unhealthyPodEvictionPolicy"), *pol, supportedUnhealthyPodEvictionPolicies))
		}
	}
	return errs
}

// ValidatePodDisruptionBudgetUpdate validates an update: the new object
// must be valid (the spec is mutable, as upstream).
func ValidatePodDisruptionBudgetUpdate(pdb, old *policyv1.PodDisruptionBudget) field.ErrorList {
	errs := ValidatePodDisruptionBudget(pdb)
	return append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&pdb.ObjectMeta, &old.ObjectMeta, metadataPath)...)
}

// ValidatePodDisruptionBudgetStatusUpdate validates a status update: valid
// conditions and non-negative counts.
func ValidatePodDisruptionBudgetStatusUpdate(pdb, old *policyv1.PodDisruptionBudget) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&pdb.ObjectMeta, &old.ObjectMeta, metadataPath)
	st, p := pdb.Status, field.NewPath("status")
	errs = append(errs, metav1validation.ValidateConditions(st.Conditions, p.Child("conditions"))...)
	errs = append(errs, validateNonnegative(int64(st.DisruptionsAllowed), p.Child("disruptionsAllowed"))...)
	errs = append(errs, validateNonnegative(int64(st.CurrentHealthy), p.Child("currentHealthy"))...)
	errs = append(errs, validateNonnegative(int64(st.DesiredHealthy), p.Child("desiredHealthy"))...)
	return append(errs, validateNonnegative(int64(st.ExpectedPods), p.Child("expectedPods"))...)
}
