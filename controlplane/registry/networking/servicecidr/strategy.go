// Package servicecidr is the registry strategy for networking.k8s.io/v1
// ServiceCIDRs (cluster-scoped; the CIDRs are immutable but for a second
// family added to a single-stack one; the status changes only through
// /status) and their table (NAME CIDRS AGE).
package servicecidr

import (
	"context"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the servicecidrs strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the servicecidrs strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, false)}
	s.Reset = base.Reset("networking.k8s.io/v1", "status")
	return s
}

// PrepareForCreate leaves the object as it is (upstream keeps a status
// given on create).
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate keeps the stored status.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*networkingv1.ServiceCIDR).Status = old.(*networkingv1.ServiceCIDR).Status
}

// Validate validates a new ServiceCIDR.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateServiceCIDR(obj.(*networkingv1.ServiceCIDR))
}

// ValidateUpdate validates a ServiceCIDR update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateServiceCIDRUpdate(obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR))
}

// StatusStrategy is the servicecidrs/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the /status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("networking.k8s.io/v1", "spec")
	return s
}

// PrepareForUpdate keeps the stored spec and metadata.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR)
	n.Spec = o.Spec
	metav1.ResetObjectMetaForStatus(&n.ObjectMeta, &o.ObjectMeta)
}

// ValidateUpdate validates a status update.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateServiceCIDRStatusUpdate(obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR))
}

// GetAttrs returns a ServiceCIDR's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches ServiceCIDRs against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints ServiceCIDRs as kubectl get servicecidrs does.
var Table = base.Table[*networkingv1.ServiceCIDR]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("CIDRs", "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable."),
		base.AgeColumn,
	},
	Row: func(c *networkingv1.ServiceCIDR, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{c.Name, strings.Join(c.Spec.CIDRs, ","), base.Age(c.CreationTimestamp, now)}, nil
	},
}
