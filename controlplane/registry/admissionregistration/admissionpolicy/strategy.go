// Package admissionpolicy describes admissionregistration.k8s.io/v1
// ValidatingAdmissionPolicies to the registry (spec and a
// /status the type-checking controller writes) and their bindings:
// generation, validation with CEL compilation, metadata field selectors and
// the tables (NAME VALIDATIONS PARAMKIND AGE; NAME POLICYNAME PARAMREF AGE).
package admissionpolicy

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type (
	policy  = admissionregistrationv1.ValidatingAdmissionPolicy
	binding = admissionregistrationv1.ValidatingAdmissionPolicyBinding
)

// PolicyKind describes validatingadmissionpolicies: the type-checking
// controller writes the status.
var PolicyKind = base.Kind[*policy]{
	APIVersion:           "admissionregistration.k8s.io/v1",
	Status:               true,
	SpecGeneration:       true,
	StatusKeepsMeta:      true,
	StatusResets:         []string{"metadata", "spec"},
	Validate:             validation.ValidateValidatingAdmissionPolicy,
	ValidateUpdate:       validation.ValidateValidatingAdmissionPolicyUpdate,
	ValidateStatusUpdate: validation.ValidateValidatingAdmissionPolicyStatusUpdate,
	Table:                policyTable,
}

// BindingKind describes validatingadmissionpolicybindings.
var BindingKind = base.Kind[*binding]{
	APIVersion:     "admissionregistration.k8s.io/v1",
	SpecGeneration: true,
	Validate:       validation.ValidateValidatingAdmissionPolicyBinding,
	ValidateUpdate: validation.ValidateValidatingAdmissionPolicyBindingUpdate,
	Table:          bindingTable,
}

// policyTable prints NAME VALIDATIONS PARAMKIND AGE, as kube-apiserver.
var policyTable = base.Table[*policy]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.IntCol("Validations", admissionregistrationv1.ValidatingAdmissionPolicySpec{}.SwaggerDoc()["validations"]),
		base.Col("ParamKind", admissionregistrationv1.ValidatingAdmissionPolicySpec{}.SwaggerDoc()["paramKind"]),
		base.AgeColumn,
	},
	Row: func(p *policy, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		kind := "<unset>"
		if k := p.Spec.ParamKind; k != nil {
			kind = k.APIVersion + "/" + k.Kind
		}
		return []interface{}{p.Name, int64(len(p.Spec.Validations)), kind, base.Age(p.CreationTimestamp, now)}, nil
	},
}

// bindingTable prints NAME POLICYNAME PARAMREF AGE, as kube-apiserver.
var bindingTable = base.Table[*binding]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("PolicyName", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{}.SwaggerDoc()["policyName"]),
		base.Col("ParamRef", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{}.SwaggerDoc()["paramRef"]),
		base.AgeColumn,
	},
	Row: func(b *binding, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		ref := "<unset>"
		if r := b.Spec.ParamRef; r != nil {
			switch {
			case r.Name != "" && r.Namespace != "":
				ref = r.Namespace + "/" + r.Name
			case r.Name != "":
				ref = "*/" + r.Name
			case r.Selector != nil:
				ref = r.Selector.String()
			}
		}
		return []interface{}{b.Name, b.Spec.PolicyName, ref, base.Age(b.CreationTimestamp, now)}, nil
	},
}
