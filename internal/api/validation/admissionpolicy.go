package validation

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/util/jsonpath"
)

const (
	maxAuditAnnotations                     = 20
	maxAuditAnnotationValueExpressionLength = 5 * 1024
	maxMatchConditions                      = 64
)

var (
	supportedFailurePolicies = []string{string(admissionregistrationv1.Fail), string(admissionregistrationv1.Ignore)}
	supportedMatchPolicies   = []string{string(admissionregistrationv1.Equivalent), string(admissionregistrationv1.Exact)}
	supportedPolicyReasons   = []string{string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid),
		string(metav1.StatusReasonRequestEntityTooLarge), string(metav1.StatusReasonUnauthorized)}
	supportedValidationActions = []string{string(admissionregistrationv1.Audit), string(admissionregistrationv1.Deny), string(admissionregistrationv1.Warn)}
	newlines                   = regexp.MustCompile(`[\n\r]+`)
	celIdentifier              = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	celReserved                = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else",
		"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")
)

// policyOptions carry what an update relaxes: expressions already stored
// compile in the stored-expressions environment (so a CEL library removed
// later does not make an old policy unwritable), and match conditions
// unchanged since the old object are not checked again.
type policyOptions struct {
	stored                sets.Set[string]
	ignoreMatchConditions bool
	paramsInConditions    bool
}

func (o policyOptions) env(expr string) environment.Type {
	if o.stored.Has(expr) {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

var (
	statelessCompilerOnce sync.Once
	statelessCompiler     plugincel.Compiler
)

// celCompiler returns the CEL compiler policies are checked with: a
// composited one (holding the policy's variables) when composition is
// needed, else a shared stateless one; both with strict cost, as upstream.
func celCompiler(composition bool) plugincel.Compiler {
	if composition {
		if c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())); err == nil {
			return c
		}
	}
	statelessCompilerOnce.Do(func() {
		statelessCompiler = plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	})
	return statelessCompiler
}

// ValidateValidatingAdmissionPolicy validates a new ValidatingAdmissionPolicy
// as upstream, compiling every CEL expression (compile errors name the
// field: spec.validations[0].expression: Invalid value: ...).
func ValidateValidatingAdmissionPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	return validateValidatingAdmissionPolicy(p, policyOptions{})
}

// ValidateValidatingAdmissionPolicyUpdate validates an update of a policy.
func ValidateValidatingAdmissionPolicyUpdate(p, old *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	opts := policyOptions{stored: storedPolicyExpressions(old)}
	opts.ignoreMatchConditions = equalMatchConditions(p.Spec.MatchConditions, old.Spec.MatchConditions)
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, metadataPath)
	return append(errs, validateValidatingAdmissionPolicy(p, opts)...)
}

// ValidateValidatingAdmissionPolicyStatusUpdate validates a /status write:
// the type-checking warnings and the conditions.
func ValidateValidatingAdmissionPolicyStatusUpdate(p, _ *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	sp := field.NewPath("status")
	var errs field.ErrorList
	if tc := p.Status.TypeChecking; tc != nil {
		for i, w := range tc.ExpressionWarnings {
			wp := sp.Child("typeChecking", "expressionWarnings").Index(i)
			if w.Warning == "" {
				errs = append(errs, field.Required(wp.Child("warning"), ""))
			}
			errs = append(errs, validateFieldRef(w.FieldRef, wp.Child("fieldRef"))...)
		}
	}
	return append(errs, metav1validation.ValidateConditions(p.Status.Conditions, sp.Child("conditions"))...)
}

func validateFieldRef(ref string, p *field.Path) field.ErrorList {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if err := jsonpath.New("spec").Parse("{" + ref + "}"); err != nil {
		return field.ErrorList{field.Invalid(p, ref, fmt.Sprintf("invalid JSONPath: %v", err))}
	}
	return nil
}

func validateValidatingAdmissionPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy, opts policyOptions) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, false, DNSSubdomainName, metadataPath)
	spec, sp := &p.Spec, field.NewPath("spec")
	var compiler plugincel.Compiler
	compile := func() plugincel.Compiler {
		if compiler == nil {
			compiler = celCompiler(len(spec.Variables) > 0)
		}
		return compiler
	}
	if spec.FailurePolicy == nil {
		errs = append(errs, field.Required(sp.Child("failurePolicy"), ""))
	} else if !sets.New(supportedFailurePolicies...).Has(string(*spec.FailurePolicy)) {
		errs = append(errs, field.NotSupported(sp.Child("failurePolicy"), *spec.FailurePolicy, supportedFailurePolicies))
	}
	if spec.ParamKind != nil {
		opts.paramsInConditions = true
		errs = append(errs, validateParamKind(*spec.ParamKind, sp.Child("paramKind"))...)
	}
	if spec.MatchConstraints == nil {
		errs = append(errs, field.Required(sp.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(spec.MatchConstraints, sp.Child("matchConstraints"))...)
		if len(spec.MatchConstraints.ResourceRules) == 0 {
			errs = append(errs, field.Required(sp.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	if !opts.ignoreMatchConditions {
		errs = append(errs, validateMatchConditions(spec.MatchConditions, opts, sp.Child("matchConditions"))...)
	}
	hasParams := spec.ParamKind != nil
	for i, v := range spec.Variables {
		errs = append(errs, validateVariable(compile(), v, hasParams, opts, sp.Child("variables").Index(i))...)
	}
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		msg := "validations or auditAnnotations must contain at least one item"
		return append(errs, field.Required(sp.Child("validations"), msg), field.Required(sp.Child("auditAnnotations"), msg))
	}
	for i, v := range spec.Validations {
		errs = append(errs, validateValidation(compile(), v, hasParams, opts, sp.Child("validations").Index(i))...)
	}
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(sp.Child("auditAnnotations"), spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i, a := range spec.AuditAnnotations {
		ap := sp.Child("auditAnnotations").Index(i)
		errs = append(errs, validateAuditAnnotation(compile(), p.Name, a, hasParams, opts, ap)...)
		if keys.Has(a.Key) {
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return errs
}

func validateParamKind(k admissionregistrationv1.ParamKind, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	vp := p.Child("apiVersion")
	switch {
	case k.APIVersion == "":
		errs = append(errs, field.Required(vp, ""))
	case strings.Count(k.APIVersion, "/") > 1:
		errs = append(errs, field.Invalid(vp, k.APIVersion, "unexpected GroupVersion string: "+k.APIVersion))
	default:
		group, version := "", k.APIVersion
		if i := strings.Index(k.APIVersion, "/"); i >= 0 {
			group, version = k.APIVersion[:i], k.APIVersion[i+1:]
		}
		if group != "" {
			if msgs := validation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(vp, group, strings.Join(msgs, ",")))
			}
		}
		if version == "" {
			errs = append(errs, field.Invalid(vp, k.APIVersion, "version must be specified"))
		} else if msgs := validation.IsDNS1035Label(version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(vp, version, strings.Join(msgs, ",")))
		}
	}
	if k.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else if msgs := validation.IsDNS1035Label(strings.ToLower(k.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("kind"), k.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

func validateMatchResources(m *admissionregistrationv1.MatchResources, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m == nil {
		return nil
	}
	if m.MatchPolicy == nil {
		errs = append(errs, field.Required(p.Child("matchPolicy"), ""))
	} else if !sets.New(supportedMatchPolicies...).Has(string(*m.MatchPolicy)) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *m.MatchPolicy, supportedMatchPolicies))
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	if m.NamespaceSelector == nil {
		errs = append(errs, field.Required(p.Child("namespaceSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, opts, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector == nil {
		errs = append(errs, field.Required(p.Child("objectSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, opts, p.Child("objectSelector"))...)
	}
	for i, r := range m.ResourceRules {
		errs = append(errs, validateNamedRule(r, p.Child("resourceRules").Index(i))...)
	}
	for i, r := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(r, p.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

func validateNamedRule(r admissionregistrationv1.NamedRuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, n := range r.ResourceNames {
		for _, msg := range path.ValidatePathSegmentName(n, false) {
			errs = append(errs, field.Invalid(p.Child("resourceNames").Index(i), n, msg))
		}
		if names.Has(n) {
			errs = append(errs, field.Duplicate(p.Child("resourceNames").Index(i), n))
		}
		names.Insert(n)
	}
	return append(errs, validateRuleWithOperations(r.RuleWithOperations, p)...)
}

func validateMatchConditions(conds []admissionregistrationv1.MatchCondition, opts policyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(conds), maxMatchConditions))
	}
	names := sets.New[string]()
	for i, c := range conds {
		cp := p.Index(i)
		if expr := strings.TrimSpace(c.Expression); expr == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
		} else {
			errs = append(errs, compileCEL(celCompiler(false), &matchconditions.MatchCondition{Expression: expr},
				plugincel.OptionalVariableDeclarations{HasParams: opts.paramsInConditions, HasAuthorizer: true},
				opts.env(expr), cp.Child("expression"))...)
		}
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		} else {
			errs = append(errs, validateQualifiedName(c.Name, cp.Child("name"))...)
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
	}
	return errs
}

func validateVariable(compiler plugincel.Compiler, v admissionregistrationv1.Variable, hasParams bool, opts policyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Name) == "" {
		errs = append(errs, field.Required(p.Child("name"), "name is not specified"))
	} else if !celIdentifier.MatchString(v.Name) || celReserved.Has(v.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), v.Name, "must be a valid CEL identifier"))
	}
	if strings.TrimSpace(v.Expression) == "" {
		return append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	}
	composited, ok := compiler.(*plugincel.CompositedCompiler)
	if !ok {
		return append(errs, field.InternalError(p, fmt.Errorf("variable composition is not allowed")))
	}
	variable := &validatingpolicy.Variable{Name: v.Name, Expression: v.Expression}
	result := composited.CompileAndStoreVariable(variable,
		plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, opts.env(v.Expression))
	if result.Error != nil {
		errs = append(errs, celError(p.Child("expression"), v.Expression, result.Error))
	}
	return errs
}

func validateValidation(compiler plugincel.Compiler, v admissionregistrationv1.Validation, hasParams bool, opts policyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	msg, msgExpr := strings.TrimSpace(v.Message), strings.TrimSpace(v.MessageExpression)
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(p.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, compileCEL(compiler, &validatingpolicy.ValidationCondition{Expression: v.Expression},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true},
			opts.env(v.Expression), p.Child("expression"))...)
	}
	if v.MessageExpression != "" && msgExpr == "" {
		errs = append(errs, field.Invalid(p.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if msgExpr != "" {
		// The message expression sees params only when the policy has a
		// paramKind, and never the authorizer, as upstream.
		errs = append(errs, compileCEL(compiler, &validatingpolicy.MessageExpressionCondition{MessageExpression: v.MessageExpression},
			plugincel.OptionalVariableDeclarations{HasParams: opts.paramsInConditions},
			opts.env(v.MessageExpression), p.Child("messageExpression"))...)
	}
	if v.Message != "" && msg == "" {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must be non-empty if specified"))
	} else if newlines.MatchString(msg) {
		errs = append(errs, field.Invalid(p.Child("message"), v.Message, "must not contain line breaks"))
	}
	if v.Reason != nil && !sets.New(supportedPolicyReasons...).Has(string(*v.Reason)) {
		errs = append(errs, field.NotSupported(p.Child("reason"), *v.Reason, supportedPolicyReasons))
	}
	return errs
}

func validateAuditAnnotation(compiler plugincel.Compiler, policy string, a admissionregistrationv1.AuditAnnotation, hasParams bool, opts policyOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy != "" {
		errs = append(errs, validateQualifiedName(policy+"/"+a.Key, p.Child("key"))...)
	} else {
		errs = append(errs, field.Invalid(p.Child("key"), a.Key, "requires metadata.name be non-empty"))
	}
	expr := strings.TrimSpace(a.ValueExpression)
	switch {
	case expr == "":
		errs = append(errs, field.Required(p.Child("valueExpression"), "valueExpression is not specified"))
	case len(expr) > maxAuditAnnotationValueExpressionLength:
		errs = append(errs, field.Required(p.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
	default:
		result := compiler.CompileCELExpression(&validatingpolicy.AuditAnnotationCondition{ValueExpression: expr},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, opts.env(a.ValueExpression))
		if result.Error != nil {
			errs = append(errs, celError(p.Child("valueExpression"), a.ValueExpression, result.Error))
		}
	}
	return errs
}

// compileCEL compiles one expression, its error as a field error.
func compileCEL(compiler plugincel.Compiler, expr plugincel.ExpressionAccessor, vars plugincel.OptionalVariableDeclarations, env environment.Type, p *field.Path) field.ErrorList {
	if result := compiler.CompileCELExpression(expr, vars, env); result.Error != nil {
		return field.ErrorList{celError(p, expr.GetExpression(), result.Error)}
	}
	return nil
}

func celError(p *field.Path, expr string, err *cel.Error) *field.Error {
	switch err.Type {
	case cel.ErrorTypeRequired:
		return field.Required(p, err.Detail)
	case cel.ErrorTypeInvalid:
		return field.Invalid(p, expr, err.Detail)
	default:
		return field.InternalError(p, err)
	}
}

// storedPolicyExpressions are the expressions of an existing policy.
func storedPolicyExpressions(p *admissionregistrationv1.ValidatingAdmissionPolicy) sets.Set[string] {
	s := sets.New[string]()
	for _, c := range p.Spec.MatchConditions {
		s.Insert(c.Expression)
	}
	for _, v := range p.Spec.Validations {
		s.Insert(v.Expression)
		if v.MessageExpression != "" {
			s.Insert(v.MessageExpression)
		}
	}
	for _, a := range p.Spec.AuditAnnotations {
		s.Insert(a.ValueExpression)
	}
	for _, v := range p.Spec.Variables {
		s.Insert(v.Expression)
	}
	return s
}

func equalMatchConditions(a, b []admissionregistrationv1.MatchCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ValidateValidatingAdmissionPolicyBinding validates a binding as upstream.
func ValidateValidatingAdmissionPolicyBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, false, DNSSubdomainName, metadataPath)
	sp := field.NewPath("spec")
	if b.Spec.PolicyName == "" {
		errs = append(errs, field.Required(sp.Child("policyName"), ""))
	} else {
		for _, msg := range DNSSubdomainName(b.Spec.PolicyName, false) {
			errs = append(errs, field.Invalid(sp.Child("policyName"), b.Spec.PolicyName, msg))
		}
	}
	errs = append(errs, validateParamRef(b.Spec.ParamRef, sp.Child("paramRef"))...)
	errs = append(errs, validateMatchResources(b.Spec.MatchResources, sp.Child("matchResources"))...)
	return append(errs, validateValidationActions(b.Spec.ValidationActions, sp.Child("validationActions"))...)
}

// ValidateValidatingAdmissionPolicyBindingUpdate validates an update of a binding.
func ValidateValidatingAdmissionPolicyBindingUpdate(b, old *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, metadataPath)
	return append(errs, ValidateValidatingAdmissionPolicyBinding(b)...)
}

func validateParamRef(r *admissionregistrationv1.ParamRef, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	exclusive := "name and selector are mutually exclusive"
	if r.Name != "" {
		for _, msg := range path.ValidatePathSegmentName(r.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
		if r.Selector != nil {
			errs = append(errs, field.Forbidden(p.Child("name"), exclusive))
		}
	}
	if r.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(r.Selector, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
		if r.Name != "" {
			errs = append(errs, field.Forbidden(p.Child("selector"), exclusive))
		}
	}
	if r.Name == "" && r.Selector == nil {
		errs = append(errs, field.Required(p, "one of name or selector must be specified"))
	}
	switch a := r.ParameterNotFoundAction; {
	case a == nil || *a == "":
		errs = append(errs, field.Required(p.Child("parameterNotFoundAction"), ""))
	case *a != admissionregistrationv1.DenyAction && *a != admissionregistrationv1.AllowAction:
		errs = append(errs, field.NotSupported(p.Child("parameterNotFoundAction"), a,
			[]string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}))
	}
	return errs
}

func validateValidationActions(actions []admissionregistrationv1.ValidationAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[admissionregistrationv1.ValidationAction]()
	for i, a := range actions {
		if !sets.New(supportedValidationActions...).Has(string(a)) {
			errs = append(errs, field.NotSupported(p.Index(i), a, supportedValidationActions))
		}
		if seen.Has(a) {
			errs = append(errs, field.Duplicate(p.Index(i), a))
		}
		seen.Insert(a)
	}
	if seen.Has(admissionregistrationv1.Deny) && seen.Has(admissionregistrationv1.Warn) {
		errs = append(errs, field.Invalid(p, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(seen) == 0 {
		errs = append(errs, field.Required(p, "at least one validation action is required"))
	}
	return errs
}
