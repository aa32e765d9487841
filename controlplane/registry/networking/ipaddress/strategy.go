// Package ipaddress describes networking.k8s.io/v1 IPAddresses to the
// registry (cluster-scoped, named by the address itself; the parent
// reference is immutable) and their table (NAME PARENTREF AGE).
package ipaddress

import (
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes ipaddresses.
var Kind = base.Kind[*networkingv1.IPAddress]{
	// generateName is taken as the name itself (an address has no random
	// suffix), as upstream
	NameGenerator:  sameName{},
	Validate:       validation.ValidateIPAddress,
	ValidateUpdate: validation.ValidateIPAddressUpdate,
	Table:          table,
}

// sameName generates the name given as generateName.
type sameName struct{}

// GenerateName returns base.
func (sameName) GenerateName(base string) string { return base }

// table prints IPAddresses as kubectl get ipaddresses does.
var table = base.Table[*networkingv1.IPAddress]{
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
