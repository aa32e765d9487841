// Package endpoints describes core/v1 endpoints to the registry
// (create-on-update, as upstream) and their table (NAME ENDPOINTS AGE).
package endpoints

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes endpoints.
var Kind = base.Kind[*v1.Endpoints]{
	Namespaced: true, CreateOnUpdate: true,
	Validate:       validation.ValidateEndpoints,
	ValidateUpdate: validation.ValidateEndpointsUpdate,
	Table:          table,
}

// maxShown is how many ip:port pairs the ENDPOINTS column lists.
const maxShown = 3

// table prints NAME ENDPOINTS AGE.
var table = base.Table[*v1.Endpoints]{
	Columns: []metav1.TableColumnDefinition{base.NameColumn, base.Col("Endpoints", v1.Endpoints{}.SwaggerDoc()["subsets"]), base.AgeColumn},
	Row: func(ep *v1.Endpoints, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{ep.Name, Format(ep.Subsets), base.Age(ep.CreationTimestamp, now)}, nil
	},
}

// Format is the ENDPOINTS column: ready ip:port pairs (at most three, then
// "+ N more..."), or <none>.
func Format(subsets []v1.EndpointSubset) string {
	var shown []string
	count := 0
	for _, ss := range subsets {
		for _, a := range ss.Addresses {
			if len(ss.Ports) == 0 {
				count++
				if len(shown) < maxShown {
					shown = append(shown, a.IP)
				}
				continue
			}
			for _, p := range ss.Ports {
				count++
				if len(shown) < maxShown {
					shown = append(shown, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
				}
			}
		}
	}
	s := strings.Join(shown, ",")
	if count > maxShown {
		s += fmt.Sprintf(" + %d more...", count-maxShown)
	}
	return base.OrNone(s)
}
