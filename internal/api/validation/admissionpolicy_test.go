package validation

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/internal/api/defaults"
)

func validPolicy(mutate func(*admissionregistrationv1.ValidatingAdmissionPolicy)) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas < 5", MessageExpression: "'too many: ' + string(object.spec.replicas)"}},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	defaults.ValidatingAdmissionPolicy(p)
	return p
}

func TestValidateValidatingAdmissionPolicy(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*admissionregistrationv1.ValidatingAdmissionPolicy)
		wants  []want
	}{
		"valid": {nil, nil},
		"variables and params": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "max", Expression: "int(params.data.max)"}}
			p.Spec.Validations[0].Expression = "object.spec.replicas <= variables.max"
		}, nil},
		"params without paramKind": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.spec.replicas <= params.max"
		}, []want{{field.ErrorTypeInvalid, "spec.validations[0].expression", "undeclared reference to 'params'"}}},
		"syntax error": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.spec.replicas <<= 3"
		}, []want{{field.ErrorTypeInvalid, "spec.validations[0].expression", "compilation failed"}}},
		"bad message expression": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "'x' +"
		}, []want{{field.ErrorTypeInvalid, "spec.validations[0].messageExpression", "compilation failed"}}},
		"no validations": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.Validations = nil }, []want{
			{field.ErrorTypeRequired, "spec.validations", "validations or auditAnnotations must contain at least one item"},
			{field.ErrorTypeRequired, "spec.auditAnnotations", "validations or auditAnnotations must contain at least one item"}}},
		"no match constraints": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.MatchConstraints = nil },
			[]want{{field.ErrorTypeRequired, "spec.matchConstraints", ""}}},
		"no resource rules": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules = nil
		},
			[]want{{field.ErrorTypeRequired, "spec.matchConstraints.resourceRules", ""}}},
		"bad failure policy": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			f := admissionregistrationv1.FailurePolicyType("Maybe")
			p.Spec.FailurePolicy = &f
		}, []want{{field.ErrorTypeNotSupported, "spec.failurePolicy", ""}}},
		"bad variable name and duplicate condition": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "in", Expression: "1"}}
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "true"}, {Name: "a", Expression: "true"}}
		}, []want{{field.ErrorTypeInvalid, "spec.variables[0].name", "must be a valid CEL identifier"},
			{field.ErrorTypeDuplicate, "spec.matchConditions[1].name", ""}}},
		"bad param kind": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "a/b/c"}
		}, []want{{field.ErrorTypeInvalid, "spec.paramKind.apiVersion", "unexpected GroupVersion string: a/b/c"},
			{field.ErrorTypeRequired, "spec.paramKind.kind", ""}}},
		"duplicate audit annotation": {func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "k", ValueExpression: "'v'"}, {Key: "k", ValueExpression: "'w'"}}
		}, []want{{field.ErrorTypeDuplicate, "spec.auditAnnotations[1].key", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			checkErrors(t, ValidateValidatingAdmissionPolicy(validPolicy(tc.mutate)), tc.wants...)
		})
	}
}

func TestValidateValidatingAdmissionPolicyStatus(t *testing.T) {
	p := validPolicy(nil)
	p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{
		{FieldRef: "spec.validations[0].expression", Warning: "w"}, {FieldRef: "spec.[", Warning: ""}}}
	checkErrors(t, ValidateValidatingAdmissionPolicyStatusUpdate(p, p),
		want{field.ErrorTypeRequired, "status.typeChecking.expressionWarnings[1].warning", ""},
		want{field.ErrorTypeInvalid, "status.typeChecking.expressionWarnings[1].fieldRef", "invalid JSONPath"})
}

func TestValidateValidatingAdmissionPolicyBinding(t *testing.T) {
	deny := admissionregistrationv1.DenyAction
	for name, tc := range map[string]struct {
		spec  admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec
		wants []want
	}{
		"valid": {admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit},
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "cm", ParameterNotFoundAction: &deny}}, nil},
		"empty": {admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{}, []want{
			{field.ErrorTypeRequired, "spec.policyName", ""},
			{field.ErrorTypeRequired, "spec.validationActions", "at least one validation action is required"}}},
		"deny and warn": {admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Warn, admissionregistrationv1.Warn}}, []want{
			{field.ErrorTypeInvalid, "spec.validationActions", "must not contain both Deny and Warn"},
			{field.ErrorTypeDuplicate, "spec.validationActions[2]", ""}}},
		"param ref with name and selector, no action": {admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "cm", Selector: &metav1.LabelSelector{}}}, []want{
			{field.ErrorTypeForbidden, "spec.paramRef.name", "name and selector are mutually exclusive"},
			{field.ErrorTypeForbidden, "spec.paramRef.selector", "name and selector are mutually exclusive"},
			{field.ErrorTypeRequired, "spec.paramRef.parameterNotFoundAction", ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: tc.spec}
			checkErrors(t, ValidateValidatingAdmissionPolicyBinding(b), tc.wants...)
		})
	}
}

func TestValidateWebhookMatchConditions(t *testing.T) {
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://example.com/hook"
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a.b.c", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig:    admissionregistrationv1.WebhookClientConfig{URL: &url},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "bad", Expression: "object.x ==="}, {Name: "", Expression: "true"}}}}}
	checkErrors(t, ValidateValidatingWebhookConfiguration(c),
		want{field.ErrorTypeInvalid, "webhooks[0].matchConditions[0].expression", "compilation failed"},
		want{field.ErrorTypeRequired, "webhooks[0].matchConditions[1].name", ""})
}
