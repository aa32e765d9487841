// Package endpoints is the registry strategy for core/v1 endpoints
// (create-on-update, as upstream) and their table (NAME ENDPOINTS AGE).
package endpoints

import (
	"context"
	"fmt"
	"net"
	"strconv"
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

// Strategy is the endpoints strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the endpoints strategy; a PUT may create endpoints.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.CreateOnUpdate = true
	return s
}

// PrepareForCreate does nothing: endpoints have no status.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing: endpoints have no status.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates new endpoints.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateEndpoints(obj.(*v1.Endpoints))
}

// ValidateUpdate validates an endpoints update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateEndpointsUpdate(obj.(*v1.Endpoints), old.(*v1.Endpoints))
}

// GetAttrs returns the endpoints' labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches endpoints against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// maxShown is how many ip:port pairs the ENDPOINTS column lists.
const maxShown = 3

// Table prints NAME ENDPOINTS AGE.
var Table = base.Table[*v1.Endpoints]{
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
