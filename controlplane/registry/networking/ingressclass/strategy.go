// Package ingressclass describes networking.k8s.io/v1 IngressClasses to
// the registry (cluster-scoped; the controller is immutable) and their
// table (NAME CONTROLLER PARAMETERS AGE).
package ingressclass

import (
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes ingressclasses.
var Kind = base.Kind[*networkingv1.IngressClass]{
	SpecGeneration: true,
	Validate:       validation.ValidateIngressClass,
	ValidateUpdate: validation.ValidateIngressClassUpdate,
	Table:          table,
}

// table prints IngressClasses as kubectl get ingressclass does.
var table = base.Table[*networkingv1.IngressClass]{
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
