package validation

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidatePodDisruptionBudget(t *testing.T) {
	i := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	s := func(v string) *intstr.IntOrString { x := intstr.FromString(v); return &x }
	valid := func() *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: i(1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	}
	for name, tc := range map[string]struct {
		mutate func(*policyv1.PodDisruptionBudget)
		wants  []want
	}{
		"valid":                {func(*policyv1.PodDisruptionBudget) {}, nil},
		"percent":              {func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = s("50%") }, nil},
		"maxUnavailable alone": {func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, i(1) }, nil},
		"both set": {func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = i(1) },
			[]want{{field.ErrorTypeInvalid, "spec", "minAvailable and maxUnavailable cannot be both set"}}},
		"negative": {func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = i(-1) },
			[]want{{field.ErrorTypeInvalid, "spec.minAvailable", "must be greater than or equal to 0"}}},
		"over 100%": {func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, s("101%") },
			[]want{{field.ErrorTypeInvalid, "spec.maxUnavailable", "must not be greater than 100%"}}},
		"not a percent": {func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = s("half") },
			[]want{{field.ErrorTypeInvalid, "spec.minAvailable", ""}}},
		"bad selector": {func(p *policyv1.PodDisruptionBudget) { p.Spec.Selector.MatchLabels = map[string]string{"a b": "x"} },
			[]want{{field.ErrorTypeInvalid, "spec.selector.matchLabels", ""}}},
		"bad eviction policy": {func(p *policyv1.PodDisruptionBudget) {
			v := policyv1.UnhealthyPodEvictionPolicyType("Sometimes")
			p.Spec.UnhealthyPodEvictionPolicy = &v
		}, []want{{field.ErrorTypeNotSupported, "spec.unhealthyPodEvictionPolicy", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			p := valid()
			tc.mutate(p)
			checkErrors(t, ValidatePodDisruptionBudget(p), tc.wants...)
		})
	}
}

func TestValidatePodDisruptionBudgetStatusUpdate(t *testing.T) {
	old := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "1"}}
	pdb := old.DeepCopy()
	pdb.Status.DisruptionsAllowed = -1
	checkErrors(t, ValidatePodDisruptionBudgetStatusUpdate(pdb, old), want{field.ErrorTypeInvalid, "status.disruptionsAllowed", "must be greater than or equal to 0"})
}
