// Package ingress describes networking.k8s.io/v1 Ingresses to the
// registry (namespaced; the status changes only through /status, which
// may also change metadata, as upstream) and their table (NAME CLASS HOSTS
// ADDRESS PORTS AGE).
package ingress

import (
	"fmt"
	"sort"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/controlplane/registry/base"
	"berth/internal/api/validation"
)

type ingress = networkingv1.Ingress

// Kind describes ingresses.
var Kind = base.Kind[*ingress]{
	APIVersion: "networking.k8s.io/v1", Namespaced: true,
	Status:               true, // the controller reports it
	SpecGeneration:       true,
	Validate:             validation.ValidateIngress,
	ValidateUpdate:       validation.ValidateIngressUpdate,
	ValidateStatusUpdate: validation.ValidateIngressStatusUpdate,
	Warnings:             validation.IngressWarnings, // the deprecated class annotation
	StatusWarnings:       func(ing, _ *ingress) []string { return validation.IngressStatusWarnings(ing) },
	Table:                table,
}

// table prints Ingresses as kubectl get ingress does.
var table = base.Table[*ingress]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Class", "The name of the IngressClass resource that should be used for additional configuration"),
		base.Col("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
		base.Col("Address", "Address is a list containing ingress points for the load-balancer"),
		base.Col("Ports", "Ports of TLS configurations that open"),
		base.AgeColumn,
	},
	Row: func(ing *ingress, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		class := "<none>"
		if ing.Spec.IngressClassName != nil {
			class = *ing.Spec.IngressClassName
		}
		ports := "80"
		if len(ing.Spec.TLS) > 0 {
			ports = "80, 443"
		}
		return []interface{}{ing.Name, class, Hosts(ing.Spec.Rules), Address(ing.Status.LoadBalancer), ports, base.Age(ing.CreationTimestamp, now)}, nil
	},
}

// maxHosts is how many hosts the HOSTS column names before "+ N more...".
const maxHosts = 3

// Hosts is the HOSTS column: the rules' hosts until three are named (then
// "+ N more...", N counted in rules past the third, as upstream), or "*"
// when no rule names a host.
func Hosts(rules []networkingv1.IngressRule) string {
	var hosts []string
	more := false
	for _, r := range rules {
		if len(hosts) == maxHosts {
			more = true
			break
		}
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	if len(hosts) == 0 {
		return "*"
	}
	out := strings.Join(hosts, ",")
	if more {
		out += fmt.Sprintf(" + %d more...", len(rules)-maxHosts)
	}
	return out
}

// Address is the ADDRESS column: the load balancer's IPs (or host names
// where no IP is given), sorted, each once.
func Address(lb networkingv1.IngressLoadBalancerStatus) string {
	seen := map[string]bool{}
	for _, in := range lb.Ingress {
		switch {
		case in.IP != "":
			seen[in.IP] = true
		case in.Hostname != "":
			seen[in.Hostname] = true
		}
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
