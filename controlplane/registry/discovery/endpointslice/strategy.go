// Package endpointslice describes discovery.k8s.io/v1 endpoint slices to
// the registry: generation bumped when endpoints, ports or addressType
// change, an immutable addressType, and the table (NAME ADDRESSTYPE PORTS
// ENDPOINTS AGE).
package endpointslice

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes endpointslices.
var Kind = base.Kind[*discoveryv1.EndpointSlice]{
	Namespaced:     true,
	Generation:     func(es *discoveryv1.EndpointSlice) any { return []any{es.Endpoints, es.Ports, es.AddressType} },
	Validate:       validation.ValidateEndpointSlice,
	ValidateUpdate: validation.ValidateEndpointSliceUpdate,
	Table:          table,
}

// maxShownEndpoints is how many addresses the ENDPOINTS column lists.
const maxShownEndpoints = 3

// table prints endpoint slices as kubectl get endpointslices does.
var table = base.Table[*discoveryv1.EndpointSlice]{
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
