// Package endpointslice is the registry strategy for discovery.k8s.io/v1
// endpoint slices: generation bumped when endpoints, ports or addressType
// change, an immutable addressType, and the table (NAME ADDRESSTYPE PORTS
// ENDPOINTS AGE).
package endpointslice

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the endpointslices strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the endpointslices strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy { return Strategy{base.New(typer, true)} }

// PrepareForCreate sets generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*discoveryv1.EndpointSlice).Generation = 1
}

// PrepareForUpdate bumps the generation when the slice's content changed.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
	if !apiequality.Semantic.DeepEqual(n.Endpoints, o.Endpoints) || !apiequality.Semantic.DeepEqual(n.Ports, o.Ports) || n.AddressType != o.AddressType {
		n.Generation = o.Generation + 1
	}
}

// Validate validates a new endpoint slice.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateEndpointSlice(obj.(*discoveryv1.EndpointSlice))
}

// ValidateUpdate validates an endpoint slice update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateEndpointSliceUpdate(obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice))
}

// GetAttrs returns an endpoint slice's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches endpoint slices against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// maxShownEndpoints is how many addresses the ENDPOINTS column lists.
const maxShownEndpoints = 3

// Table prints endpoint slices as kubectl get endpointslices does.
var Table = base.Table[*discoveryv1.EndpointSlice]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("AddressType", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]),
		base.Col("Ports", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]),
		base.Col("Endpoints", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
		base.AgeColumn,
	},
	Row: func(es *discoveryv1.EndpointSlice, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{es.Name, string(es.AddressType), ports(es.Ports), endpoints(es.Endpoints), base.Age(es.CreationTimestamp, now)}, nil
	},
}

func ports(ps []discoveryv1.EndpointPort) string {
	if len(ps) == 0 {
		return "<unset>"
	}
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.Port == nil {
			out = append(out, "<unset>")
		} else {
			out = append(out, strconv.Itoa(int(*p.Port)))
		}
	}
	return strings.Join(out, ",")
}

func endpoints(eps []discoveryv1.Endpoint) string {
	var addrs []string
	total := 0
	for _, ep := range eps {
		for _, a := range ep.Addresses {
			total++
			if len(addrs) < maxShownEndpoints {
				addrs = append(addrs, a)
			}
		}
	}
	if total == 0 {
		return "<unset>"
	}
	s := strings.Join(addrs, ",")
	if total > maxShownEndpoints {
		s += fmt.Sprintf(" + %d more...", total-maxShownEndpoints)
	}
	return s
}
