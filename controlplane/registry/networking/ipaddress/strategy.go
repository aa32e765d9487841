// Package ipaddress is the registry strategy for networking.k8s.io/v1
// IPAddresses (cluster-scoped, named by the address itself; the parent
// reference is immutable) and their table (NAME PARENTREF AGE).
package ipaddress

import (
	"context"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the ipaddresses strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the ipaddresses strategy; generateName is taken as
// the name itself (an address has no random suffix), as upstream.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, false)}
	s.NameGenerator = sameName{}
	return s
}

type sameName struct{}

func (sameName) GenerateName(base string) string { return base }

// PrepareForCreate leaves the object as it is.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate leaves the object as it is.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate validates a new IPAddress.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateIPAddress(obj.(*networkingv1.IPAddress))
}

// ValidateUpdate validates an IPAddress update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateIPAddressUpdate(obj.(*networkingv1.IPAddress), old.(*networkingv1.IPAddress))
}

// GetAttrs returns an IPAddress's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, false) })

// Predicate matches IPAddresses against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints IPAddresses as kubectl get ipaddresses does.
var Table = base.Table[*networkingv1.IPAddress]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("ParentRef", "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object."),
		base.AgeColumn,
	},
	Row: func(ip *networkingv1.IPAddress, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{ip.Name, ParentRef(ip.Spec.ParentRef), base.Age(ip.CreationTimestamp, now)}, nil
	},
}

// ParentRef is the PARENTREF column: resource[.group][/namespace]/name,
// or "<none>".
func ParentRef(ref *networkingv1.ParentReference) string {
	if ref == nil {
		return "<none>"
	}
	s := strings.ToLower(schema.GroupResource{Group: ref.Group, Resource: ref.Resource}.String())
	if ref.Namespace != "" {
		s += "/" + ref.Namespace
	}
	return s + "/" + ref.Name
}
