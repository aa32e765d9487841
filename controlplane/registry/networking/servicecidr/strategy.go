// Package servicecidr describes networking.k8s.io/v1 ServiceCIDRs to the
// registry (cluster-scoped; the CIDRs are immutable but for a second
// family added to a single-stack one; the status changes only through
// /status) and their table (NAME CIDRS AGE).
package servicecidr

import (
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type serviceCIDR = networkingv1.ServiceCIDR

// Kind describes servicecidrs; upstream keeps a status given on create.
var Kind = base.Kind[*serviceCIDR]{
	APIVersion:           "networking.k8s.io/v1",
	Status:               true,
	NewStatus:            base.AsSent[*serviceCIDR],
	StatusKeepsMeta:      true,
	Validate:             validation.ValidateServiceCIDR,
	ValidateUpdate:       validation.ValidateServiceCIDRUpdate,
	ValidateStatusUpdate: validation.ValidateServiceCIDRStatusUpdate,
	Table:                table,
}

// table prints ServiceCIDRs as kubectl get servicecidrs does.
var table = base.Table[*serviceCIDR]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("CIDRs", "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable."),
		base.AgeColumn,
	},
	Row: func(c *serviceCIDR, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return []interface{}{c.Name, strings.Join(c.Spec.CIDRs, ","), base.Age(c.CreationTimestamp, now)}, nil
	},
}
