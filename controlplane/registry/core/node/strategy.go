// Package node describes core/v1 nodes to the registry: spec and status
// kept apart, podCIDR/podCIDRs kept consistent, field selectors and the
// table (NAME STATUS ROLES AGE VERSION, wide: INTERNAL-IP EXTERNAL-IP
// OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME).
package node

import (
	"context"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Kind describes nodes: a node registers with its status, as the kubelet
// does; a /status write is validated as a whole update.
var Kind = base.Kind[*v1.Node]{
	APIVersion:     "v1",
	Status:         true,
	NewStatus:      base.AsSent[*v1.Node],
	PrepareCreate:  func(_ context.Context, n *v1.Node) { syncPodCIDRs(n) },
	PrepareUpdate:  func(n, _ *v1.Node) { syncPodCIDRs(n) },
	Validate:       validation.ValidateNode,
	ValidateUpdate: validation.ValidateNodeUpdate,
	Fields:         fieldsets.Node,
	Table:          table,
}

// syncPodCIDRs fills podCIDRs from podCIDR or podCIDR from podCIDRs[0], as
// upstream's v1 conversion does.
func syncPodCIDRs(n *v1.Node) {
	if len(n.Spec.PodCIDRs) == 0 && n.Spec.PodCIDR != "" {
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	}
	if len(n.Spec.PodCIDRs) > 0 && n.Spec.PodCIDR == "" {
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
}

// Role label conventions kubectl reads node roles from.
const (
	roleLabelPrefix = "node-role.kubernetes.io/"
	roleLabel       = "kubernetes.io/role"
)

// table prints nodes as kubectl get nodes does.
var table = base.Table[*v1.Node]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Status", "The status of the node"),
		base.Col("Roles", "The roles of the node"),
		base.AgeColumn,
		base.Col("Version", "Kubelet Version reported by the node."),
		base.Wide(base.Col("Internal-IP", "List of addresses reachable to the node. Queried from cloud provider, if available.")),
		base.Wide(base.Col("External-IP", "List of addresses reachable to the node. Queried from cloud provider, if available.")),
		base.Wide(base.Col("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).")),
		base.Wide(base.Col("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).")),
		base.Wide(base.Col("Container-Runtime", "Container runtime version reported by the node through runtime remote API (e.g. containerd://1.4.2).")),
	},
	Row: func(n *v1.Node, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		info := n.Status.NodeInfo
		return []interface{}{n.Name, Status(n), Roles(n), base.Age(n.CreationTimestamp, now), info.KubeletVersion,
			address(n, v1.NodeInternalIP), address(n, v1.NodeExternalIP), orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion)}, nil
	},
}

// Status is the STATUS column: Ready, NotReady or Unknown, plus
// SchedulingDisabled for cordoned nodes.
func Status(n *v1.Node) string {
	var status []string
	for _, c := range n.Status.Conditions {
		if c.Type != v1.NodeReady {
			continue
		}
		if c.Status == v1.ConditionTrue {
			status = append(status, string(c.Type))
		} else {
			status = append(status, "Not"+string(c.Type))
		}
	}
	if len(status) == 0 {
		status = append(status, "Unknown")
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	return strings.Join(status, ",")
}

// Roles is the ROLES column: the node-role.kubernetes.io/<role> labels and
// kubernetes.io/role, sorted, or <none>.
func Roles(n *v1.Node) string {
	roles := map[string]bool{}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, roleLabelPrefix):
			if role := strings.TrimPrefix(k, roleLabelPrefix); role != "" {
				roles[role] = true
			}
		case k == roleLabel && v != "":
			roles[v] = true
		}
	}
	return base.OrNone(strings.Join(base.SortedKeys(roles), ","))
}

func address(n *v1.Node, t v1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
