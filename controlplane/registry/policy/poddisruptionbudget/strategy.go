// Package poddisruptionbudget is the registry strategy for policy/v1
// PodDisruptionBudgets (spec and status strategies, generation bumped on
// spec changes, as upstream) and their table (NAME MIN AVAILABLE MAX
// UNAVAILABLE ALLOWED DISRUPTIONS AGE).
package poddisruptionbudget

import (
	"context"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the poddisruptionbudgets strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the poddisruptionbudgets strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("policy/v1", "status")
	return s
}

// PrepareForCreate clears the status and sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	pdb := obj.(*policyv1.PodDisruptionBudget)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{}
	pdb.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation on a spec change.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*policyv1.PodDisruptionBudget), old.(*policyv1.PodDisruptionBudget)
	n.Status = o.Status
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) {
		n.Generation = o.Generation + 1
	}
}

// Validate validates a new PodDisruptionBudget.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidatePodDisruptionBudget(obj.(*policyv1.PodDisruptionBudget))
}

// ValidateUpdate validates a PodDisruptionBudget update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodDisruptionBudgetUpdate(obj.(*policyv1.PodDisruptionBudget), old.(*policyv1.PodDisruptionBudget))
}

// StatusStrategy is the /status strategy: only the status changes.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the /status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("policy/v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*policyv1.PodDisruptionBudget).Spec = old.(*policyv1.PodDisruptionBudget).Spec
}

// ValidateUpdate validates a status update.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidatePodDisruptionBudgetStatusUpdate(obj.(*policyv1.PodDisruptionBudget), old.(*policyv1.PodDisruptionBudget))
}

// GetAttrs returns a PodDisruptionBudget's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches PodDisruptionBudgets against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE.
var Table = base.Table[*policyv1.PodDisruptionBudget]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Min Available", "The minimum number of pods that must be available."),
		base.Col("Max Unavailable", "The maximum number of pods that may be unavailable."),
		base.IntCol("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time."),
		base.AgeColumn,
	},
	Row: func(pdb *policyv1.PodDisruptionBudget, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{pdb.Name, orNA(pdb.Spec.MinAvailable), orNA(pdb.Spec.MaxUnavailable),
			int64(pdb.Status.DisruptionsAllowed), base.Age(pdb.CreationTimestamp, now)}, nil
	},
}

// orNA prints an int-or-percent, or N/A when unset.
func orNA(v *intstr.IntOrString) string {
	if v == nil {
		return "N/A"
	}
	return v.String()
}
