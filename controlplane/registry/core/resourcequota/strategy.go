// Package resourcequota describes core/v1 resource quotas to the
// registry: spec and status kept apart, and the table (NAME AGE REQUEST
// LIMIT).
package resourcequota

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

// Kind describes resourcequotas.
var Kind = base.Kind[*v1.ResourceQuota]{
	APIVersion: "v1", Namespaced: true,
	Status:               true,
	Validate:             validation.ValidateResourceQuota,
	ValidateUpdate:       validation.ValidateResourceQuotaUpdate,
	ValidateStatusUpdate: validation.ValidateResourceQuotaStatusUpdate,
	Table:                table,
}

// table prints quotas as kubectl get resourcequotas does: REQUEST and
// LIMIT list "name: used/hard" for the request-side and limits.* names.
var table = base.Table[*v1.ResourceQuota]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.AgeColumn,
		base.Col("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
		base.Col("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
	},
	Row: func(rq *v1.ResourceQuota, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		request, limit := UsageCells(rq)
		return []interface{}{rq.Name, base.Age(rq.CreationTimestamp, now), request, limit}, nil
	},
}

// UsageCells returns the REQUEST and LIMIT cells: "name: used/hard" for
// every hard resource in status (limits.* in LIMIT, the rest in REQUEST),
// sorted by name, comma-separated.
func UsageCells(rq *v1.ResourceQuota) (request, limit string) {
	names := make([]string, 0, len(rq.Status.Hard))
	for k := range rq.Status.Hard {
		names = append(names, string(k))
	}
	sort.Strings(names)
	var req, lim []string
	for _, n := range names {
		hard := rq.Status.Hard[v1.ResourceName(n)]
		used := rq.Status.Used[v1.ResourceName(n)]
		cell := fmt.Sprintf("%s: %s/%s", n, used.String(), hard.String())
		if strings.HasPrefix(n, "limits.") {
			lim = append(lim, cell)
		} else {
			req = append(req, cell)
		}
	}
	return strings.Join(req, ", "), strings.Join(lim, ", ")
}
