package validation

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// maxMatchConditions is how many matchConditions a webhook may have.
const maxMatchConditions = 64

var (
	celCompilerOnce sync.Once
	celCompiler     plugincel.Compiler
)

// ValidateWebhookMatchConditions checks a webhook's matchConditions as
// upstream: at most 64, names required, qualified and unique, expressions
// required and compiling as CEL conditions (with the authorizer variable)
// — new expressions against the current environment, ones the old
// configuration already had (stored) against the stored one. old is nil
// on create.
func ValidateWebhookMatchConditions(conds, old []admissionregistrationv1.MatchCondition, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxMatchConditions {
		errs = append(errs, field.TooMany(fldPath, len(conds), maxMatchConditions))
	}
	stored := sets.New[string]()
	for _, c := range old {
		stored.Insert(c.Expression)
	}
	celCompilerOnce.Do(func() {
		celCompiler = plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	})
	names := sets.New[string]()
	for i, c := range conds {
		p := fldPath.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
		expr := strings.TrimSpace(c.Expression)
		if expr == "" {
			errs = append(errs, field.Required(p.Child("expression"), ""))
			continue
		}
		env := environment.NewExpressions
		if stored.Has(c.Expression) {
			env = environment.StoredExpressions
		}
		res := celCompiler.CompileCELExpression(&matchconditions.MatchCondition{Name: c.Name, Expression: expr},
			plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, env)
		if res.Error != nil {
			errs = append(errs, celError(p.Child("expression"), expr, res.Error))
		}
	}
	return errs
}

// celError is a CEL compilation error as a field error, as upstream words
// it ("compilation failed: ERROR: ...").
func celError(p *field.Path, expr string, err error) *field.Error {
	var ce *cel.Error
	if errors.As(err, &ce) {
		switch ce.Type {
		case cel.ErrorTypeRequired:
			return field.Required(p, ce.Detail)
		case cel.ErrorTypeInvalid:
			return field.Invalid(p, expr, ce.Detail)
		}
	}
	return field.InternalError(p, fmt.Errorf("unsupported error type: %w", err))
}
