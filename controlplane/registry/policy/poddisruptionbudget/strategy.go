// Package poddisruptionbudget describes policy/v1 PodDisruptionBudgets
// to the registry (spec and status strategies, generation bumped on
// spec changes, as upstream) and their table (NAME MIN AVAILABLE MAX
// UNAVAILABLE ALLOWED DISRUPTIONS AGE).
package poddisruptionbudget

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type budget = policyv1.PodDisruptionBudget

// Kind describes poddisruptionbudgets.
var Kind = base.Kind[*budget]{
	APIVersion: "policy/v1", Namespaced: true,
	Status:               true,
	SpecGeneration:       true,
	Validate:             validation.ValidatePodDisruptionBudget,
	ValidateUpdate:       validation.ValidatePodDisruptionBudgetUpdate,
	ValidateStatusUpdate: validation.ValidatePodDisruptionBudgetStatusUpdate,
	Table:                table,
}

// table prints NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE.
var table = base.Table[*budget]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Min Available", "The minimum number of pods that must be available."),
		base.Col("Max Unavailable", "The maximum number of pods that may be unavailable."),
		base.IntCol("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time."),
		base.AgeColumn,
	},
	Row: func(pdb *budget, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
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
