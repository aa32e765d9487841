// Package resourcequota is the registry strategy for core/v1 resource
// quotas: spec and status kept apart, and the table (NAME AGE REQUEST
// LIMIT).
package resourcequota

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the resourcequotas strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the resourcequotas strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("v1", "status")
	return s
}

// PrepareForCreate clears the status.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*v1.ResourceQuota).Status = v1.ResourceQuotaStatus{}
}

// PrepareForUpdate keeps the stored status.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*v1.ResourceQuota).Status = old.(*v1.ResourceQuota).Status
}

// Validate validates a new quota.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateResourceQuota(obj.(*v1.ResourceQuota))
}

// ValidateUpdate validates a quota update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateResourceQuotaUpdate(obj.(*v1.ResourceQuota), old.(*v1.ResourceQuota))
}

// StatusStrategy is the resourcequotas/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the resourcequotas/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*v1.ResourceQuota).Spec = old.(*v1.ResourceQuota).Spec
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateResourceQuotaStatusUpdate(obj.(*v1.ResourceQuota), old.(*v1.ResourceQuota))
}

// GetAttrs returns a quota's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches quotas against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints quotas as kubectl get resourcequotas does: REQUEST and
// LIMIT list "name: used/hard" for the request-side and limits.* names.
var Table = base.Table[*v1.ResourceQuota]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.AgeColumn,
		base.Col("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
		base.Col("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
	},
	Row: func(rq *v1.ResourceQuota, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		request, limit := UsageCells(rq)
		return []interface{}{rq.Name, base.Age(rq.CreationTimestamp, now), request, limit}, nil
	},
}

// UsageCells returns the REQUEST and LIMIT cells: "name: used/hard" for
// every hard resource in status (limits.* in LIMIT, the rest in REQUEST),
// sorted by name, comma-separated.
func UsageCells(rq *v1.ResourceQuota) (request, limit string) {
	names := make([]string, 0, len(rq.Status.Hard))
	for k := range rq.Status.Hard {
		names = append(names, string(k))
	}
	sort.Strings(names)
	var req, lim []string
	for _, n := range names {
		hard := rq.Status.Hard[v1.ResourceName(n)]
		used := rq.Status.Used[v1.ResourceName(n)]
		cell := fmt.Sprintf("%s: %s/%s", n, used.String(), hard.String())
		if strings.HasPrefix(n, "limits.") {
			lim = append(lim, cell)
		} else {
			req = append(req, cell)
		}
	}
	return strings.Join(req, ", "), strings.Join(lim, ", ")
}
