// Package ingressclass is the registry strategy for networking.k8s.io/v1
// IngressClasses (cluster-scoped; the controller is immutable) and their
// table (NAME CONTROLLER PARAMETERS AGE).
package ingressclass

import (
	"context"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the ingressclasses strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the ingressclasses strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, false)} }

// PrepareForCreate sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*networkingv1.IngressClass).Generation = 1
}

// PrepareForUpdate bumps the generation when the spec changed.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*networkingv1.IngressClass), old.(*networkingv1.IngressClass)
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) {
		n.Generation = o.Generation + 1
	}
}

// Validate validates a new IngressClass.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateIngressClass(obj.(*networkingv1.IngressClass))
}

// ValidateUpdate validates an IngressClass update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateIngressClassUpdate(obj.(*networkingv1.IngressClass), old.(*networkingv1.IngressClass))
}

// GetAttrs returns an IngressClass's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches IngressClasses against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints IngressClasses as kubectl get ingressclass does.
var Table = base.Table[*networkingv1.IngressClass]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Controller", "Controller that is responsible for handling this class"),
		base.Col("Parameters", "A reference to a resource with additional parameters"),
		base.AgeColumn,
	},
	Row: func(ic *networkingv1.IngressClass, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{ic.Name, ic.Spec.Controller, Parameters(ic.Spec.Parameters), base.Age(ic.CreationTimestamp, now)}, nil
	},
}

// Parameters is the PARAMETERS column: Kind[.apiGroup]/name, or "<none>".
func Parameters(p *networkingv1.IngressClassParametersReference) string {
	if p == nil {
		return "<none>"
	}
	kind := p.Kind
	if p.APIGroup != nil {
		kind += "." + *p.APIGroup
	}
	return kind + "/" + p.Name
}
