// Package mutatingwebhookconfiguration is the registry strategy for
// admissionregistration.k8s.io/v1 mutating webhook configurations:
// generation bumped when the webhooks change, and the table (NAME
// WEBHOOKS AGE).
package mutatingwebhookconfiguration

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

// Strategy is the mutatingwebhookconfigurations strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the mutatingwebhookconfigurations strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, false)} }

// PrepareForCreate sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Generation = 1
}

// PrepareForUpdate bumps the generation when the webhooks change.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*admissionregistrationv1.MutatingWebhookConfiguration), old.(*admissionregistrationv1.MutatingWebhookConfiguration)
	if !apiequality.Semantic.DeepEqual(n.Webhooks, o.Webhooks) {
		n.Generation = o.Generation + 1
	}
}

// Validate validates a new configuration.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateMutatingWebhookConfiguration(obj.(*admissionregistrationv1.MutatingWebhookConfiguration))
}

// ValidateUpdate validates a configuration update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateMutatingWebhookConfigurationUpdate(obj.(*admissionregistrationv1.MutatingWebhookConfiguration), old.(*admissionregistrationv1.MutatingWebhookConfiguration))
}

// GetAttrs returns a configuration's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches configurations against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints configurations as kubectl get mutatingwebhookconfigurations does.
var Table = base.Table[*admissionregistrationv1.MutatingWebhookConfiguration]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
		base.AgeColumn,
	},
	Row: func(c *admissionregistrationv1.MutatingWebhookConfiguration, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{c.Name, int64(len(c.Webhooks)), base.Age(c.CreationTimestamp, now)}, nil
	},
}
