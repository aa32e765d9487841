package validation

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidatePriorityClass(t *testing.T) {
	policy := func(p v1.PreemptionPolicy) *v1.PreemptionPolicy { return &p }
	for name, tc := range map[string]struct {
		pc    schedulingv1.PriorityClass
		wants []want
	}{
		"valid":                  {schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: policy(v1.PreemptNever)}, nil},
		"highest user value":     {schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "top"}, Value: 1000000000}, nil},
		"user value too high":    {schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "top"}, Value: 1000000001}, []want{{field.ErrorTypeForbidden, "value", "maximum allowed value of a user defined priority is 1000000000"}}},
		"system class":           {schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000}, nil},
		"system class bad value": {schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 5}, []want{{field.ErrorTypeForbidden, "metadata.name", "value of system-cluster-critical PriorityClass must be 2000000000"}}},
		"system class as default": {schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000, GlobalDefault: true},
			[]want{{field.ErrorTypeForbidden, "metadata.name", "globalDefault of system-cluster-critical PriorityClass must be false"}}},
		"reserved prefix": {schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 1},
			[]want{{field.ErrorTypeForbidden, "metadata.name", "priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"}}},
		"bad policy":   {schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "p"}, PreemptionPolicy: policy("Sometimes")}, []want{{field.ErrorTypeNotSupported, "preemptionPolicy", ""}}},
		"empty policy": {schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "p"}, PreemptionPolicy: policy("")}, []want{{field.ErrorTypeRequired, "preemptionPolicy", ""}}},
		"bad name":     {schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}, []want{{field.ErrorTypeInvalid, "metadata.name", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			checkErrors(t, ValidatePriorityClass(&tc.pc), tc.wants...)
		})
	}
}

func TestValidatePriorityClassUpdate(t *testing.T) {
	never, lower := v1.PreemptNever, v1.PreemptLowerPriority
	old := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high", ResourceVersion: "1"}, Value: 1000, PreemptionPolicy: &lower}
	for name, tc := range map[string]struct {
		mutate func(*schedulingv1.PriorityClass)
		wants  []want
	}{
		"description changed": {func(pc *schedulingv1.PriorityClass) { pc.Description = "new" }, nil},
		"value changed":       {func(pc *schedulingv1.PriorityClass) { pc.Value = 1 }, []want{{field.ErrorTypeForbidden, "value", "may not be changed in an update."}}},
		"policy changed":      {func(pc *schedulingv1.PriorityClass) { pc.PreemptionPolicy = &never }, []want{{field.ErrorTypeInvalid, "preemptionPolicy", "field is immutable"}}},
	} {
		t.Run(name, func(t *testing.T) {
			pc := old.DeepCopy()
			tc.mutate(pc)
			checkErrors(t, ValidatePriorityClassUpdate(pc, old), tc.wants...)
		})
	}
}
