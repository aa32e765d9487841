// Package webhookconfiguration is the registry strategy for
// admissionregistration.k8s.io/v1 mutating and validating webhook
// configurations: generation, validation, metadata field selectors, and
// the table (NAME WEBHOOKS AGE). The two kinds differ only in their types.
package webhookconfiguration

import (
	"context"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// configuration is a webhook configuration of either kind.
type configuration interface {
	runtime.Object
	metav1.Object
}

// kind is what tells the two kinds apart.
type kind[T configuration] struct {
	webhooks       func(T) any // the webhooks, compared for the generation
	count          func(T) int
	validate       func(T) field.ErrorList
	validateUpdate func(T, T) field.ErrorList
	// matchConditions are each webhook's, in order.
	matchConditions func(T) [][]admissionregistrationv1.MatchCondition
}

var (
	mutating = kind[*admissionregistrationv1.MutatingWebhookConfiguration]{
		webhooks:       func(c *admissionregistrationv1.MutatingWebhookConfiguration) any { return c.Webhooks },
		count:          func(c *admissionregistrationv1.MutatingWebhookConfiguration) int { return len(c.Webhooks) },
		validate:       validation.ValidateMutatingWebhookConfiguration,
		validateUpdate: validation.ValidateMutatingWebhookConfigurationUpdate,
		matchConditions: func(c *admissionregistrationv1.MutatingWebhookConfiguration) [][]admissionregistrationv1.MatchCondition {
			out := make([][]admissionregistrationv1.MatchCondition, len(c.Webhooks))
			for i, w := range c.Webhooks {
				out[i] = w.MatchConditions
			}
			return out
		},
	}
	validating = kind[*admissionregistrationv1.ValidatingWebhookConfiguration]{
		webhooks:       func(c *admissionregistrationv1.ValidatingWebhookConfiguration) any { return c.Webhooks },
		count:          func(c *admissionregistrationv1.ValidatingWebhookConfiguration) int { return len(c.Webhooks) },
		validate:       validation.ValidateValidatingWebhookConfiguration,
		validateUpdate: validation.ValidateValidatingWebhookConfigurationUpdate,
		matchConditions: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) [][]admissionregistrationv1.MatchCondition {
			out := make([][]admissionregistrationv1.MatchCondition, len(c.Webhooks))
			for i, w := range c.Webhooks {
				out[i] = w.MatchConditions
			}
			return out
		},
	}
)

// Strategy is the strategy of one kind of webhook configuration.
type Strategy[T configuration] struct {
	base.Strategy
	kind kind[T]
}

// NewMutatingStrategy returns the mutatingwebhookconfigurations strategy.
func NewMutatingStrategy(typer runtime.ObjectTyper) Strategy[*admissionregistrationv1.MutatingWebhookConfiguration] {
	return Strategy[*admissionregistrationv1.MutatingWebhookConfiguration]{base.New(typer, false), mutating}
}

// NewValidatingStrategy returns the validatingwebhookconfigurations strategy.
func NewValidatingStrategy(typer runtime.ObjectTyper) Strategy[*admissionregistrationv1.ValidatingWebhookConfiguration] {
	return Strategy[*admissionregistrationv1.ValidatingWebhookConfiguration]{base.New(typer, false), validating}
}

// PrepareForCreate sets generation 1.
func (s Strategy[T]) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(T).SetGeneration(1)
}

// PrepareForUpdate bumps the generation when the webhooks change.
func (s Strategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(T), old.(T)
	if !apiequality.Semantic.DeepEqual(s.kind.webhooks(n), s.kind.webhooks(o)) {
		n.SetGeneration(o.GetGeneration() + 1)
	}
}

// Validate validates a new configuration.
func (s Strategy[T]) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return append(s.kind.validate(obj.(T)), s.validateMatchConditions(obj.(T), nil)...)
}

// ValidateUpdate validates a configuration update.
func (s Strategy[T]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	was := old.(T)
	return append(s.kind.validateUpdate(obj.(T), was), s.validateMatchConditions(obj.(T), &was)...)
}

// validateMatchConditions checks every webhook's matchConditions (CEL
// expressions compiled); expressions the old configuration (nil on
// create) had are checked as stored ones.
func (s Strategy[T]) validateMatchConditions(c T, old *T) field.ErrorList {
	var stored []admissionregistrationv1.MatchCondition
	if old != nil {
		for _, conds := range s.kind.matchConditions(*old) {
			stored = append(stored, conds...)
		}
	}
	var errs field.ErrorList
	for i, conds := range s.kind.matchConditions(c) {
		errs = append(errs, validation.ValidateWebhookMatchConditions(conds, stored, field.NewPath("webhooks").Index(i).Child("matchConditions"))...)
	}
	return errs
}

// GetAttrs returns a configuration's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches configurations against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// MutatingTable and ValidatingTable print configurations as kubectl get does.
var (
	MutatingTable   = table(mutating)
	ValidatingTable = table(validating)
)

func table[T configuration](k kind[T]) base.Table[T] {
	return base.Table[T]{
		Columns: []metav1.TableColumnDefinition{
			base.NameColumn,
			{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
			base.AgeColumn,
		},
		Row: func(c T, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
			return []interface{}{c.GetName(), int64(k.count(c)), base.Age(c.GetCreationTimestamp(), now)}, nil
		},
	}
}
