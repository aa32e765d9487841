// Package webhookconfiguration describes admissionregistration.k8s.io/v1
// mutating and validating webhook configurations to the registry:
// generation, validation, metadata field selectors, and the table (NAME
// WEBHOOKS AGE). The two kinds differ only in their types.
package webhookconfiguration

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type (
	mutating   = admissionregistrationv1.MutatingWebhookConfiguration
	validating = admissionregistrationv1.ValidatingWebhookConfiguration
)

// MutatingKind describes mutatingwebhookconfigurations.
var MutatingKind = kind(func(c *mutating) any { return c.Webhooks }, func(c *mutating) int { return len(c.Webhooks) },
	validation.ValidateMutatingWebhookConfiguration, validation.ValidateMutatingWebhookConfigurationUpdate)

// ValidatingKind describes validatingwebhookconfigurations.
var ValidatingKind = kind(func(c *validating) any { return c.Webhooks }, func(c *validating) int { return len(c.Webhooks) },
	validation.ValidateValidatingWebhookConfiguration, validation.ValidateValidatingWebhookConfigurationUpdate)

// kind describes a kind of webhook configuration: the generation counts
// changes of its webhooks, the table counts them.
func kind[T base.Object](webhooks func(T) any, count func(T) int, validate func(T) field.ErrorList, validateUpdate func(obj, old T) field.ErrorList) base.Kind[T] {
	return base.Kind[T]{
		Generation:     webhooks,
		Validate:       validate,
		ValidateUpdate: validateUpdate,
		Table: base.Table[T]{
			Columns: []metav1.TableColumnDefinition{
				base.NameColumn,
				{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
				base.AgeColumn,
			},
			Row: func(c T, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
				return []interface{}{c.GetName(), int64(count(c)), base.Age(c.GetCreationTimestamp(), now)}, nil
			},
		},
	}
}
