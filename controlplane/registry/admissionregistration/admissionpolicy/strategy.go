// Package admissionpolicy is the registry strategy for
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies (spec and a
// /status the type-checking controller writes) and their bindings:
// generation, validation with CEL compilation, metadata field selectors and
// the tables (NAME VALIDATIONS PARAMKIND AGE; NAME POLICYNAME PARAMREF AGE).
package admissionpolicy

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

type (
	policy  = admissionregistrationv1.ValidatingAdmissionPolicy
	binding = admissionregistrationv1.ValidatingAdmissionPolicyBinding
)

var policyKind = base.SpecStatusKind[*policy]{
	APIVersion:           "admissionregistration.k8s.io/v1",
	Spec:                 func(p *policy) any { return p.Spec },
	SetSpec:              func(to, from *policy) { to.Spec = from.Spec },
	ClearStatus:          func(p *policy) { p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{} },
	SetStatus:            func(to, from *policy) { to.Status = from.Status },
	Validate:             validation.ValidateValidatingAdmissionPolicy,
	ValidateUpdate:       validation.ValidateValidatingAdmissionPolicyUpdate,
	ValidateStatusUpdate: validation.ValidateValidatingAdmissionPolicyStatusUpdate,
}

var bindingKind = base.SpecStatusKind[*binding]{
	APIVersion:     "admissionregistration.k8s.io/v1",
	Spec:           func(b *binding) any { return b.Spec },
	SetSpec:        func(to, from *binding) { to.Spec = from.Spec },
	Validate:       validation.ValidateValidatingAdmissionPolicyBinding,
	ValidateUpdate: validation.ValidateValidatingAdmissionPolicyBindingUpdate,
}

// NewPolicyStrategy returns the validatingadmissionpolicies strategy.
func NewPolicyStrategy(typer runtime.ObjectTyper) base.SpecStatusStrategy[*policy] {
	return base.NewSpecStatus(typer, policyKind)
}

// NewPolicyStatusStrategy returns the validatingadmissionpolicies/status strategy.
func NewPolicyStatusStrategy(typer runtime.ObjectTyper) base.SpecStatusStatusStrategy[*policy] {
	return base.NewSpecStatusStatus(typer, policyKind)
}

// NewBindingStrategy returns the validatingadmissionpolicybindings strategy.
func NewBindingStrategy(typer runtime.ObjectTyper) base.SpecStatusStrategy[*binding] {
	return base.NewSpecStatus(typer, bindingKind)
}

// GetAttrs returns a policy's or binding's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches policies and bindings against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// PolicyTable prints NAME VALIDATIONS PARAMKIND AGE, as kube-apiserver.
var PolicyTable = base.Table[*policy]{
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

// BindingTable prints NAME POLICYNAME PARAMREF AGE, as kube-apiserver.
var BindingTable = base.Table[*binding]{
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
