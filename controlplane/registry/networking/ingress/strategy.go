// Package ingress is the registry strategy for networking.k8s.io/v1
// Ingresses (namespaced; the status changes only through /status, which
// may also change metadata, as upstream) and their table (NAME CLASS HOSTS
// ADDRESS PORTS AGE).
package ingress

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the ingresses strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the ingresses strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.Reset = base.Reset("networking.k8s.io/v1", "status")
	return s
}

// PrepareForCreate clears the status (the controller reports it) and sets
// generation 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ing := obj.(*networkingv1.Ingress)
	ing.Status = networkingv1.IngressStatus{}
	ing.Generation = 1
}

// PrepareForUpdate keeps the stored status and bumps the generation when
// the spec changed.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*networkingv1.Ingress), old.(*networkingv1.Ingress)
	n.Status = o.Status
	if !apiequality.Semantic.DeepEqual(n.Spec, o.Spec) {
		n.Generation = o.Generation + 1
	}
}

// Validate validates a new Ingress.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateIngress(obj.(*networkingv1.Ingress))
}

// WarningsOnCreate warns about the deprecated class annotation.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return validation.IngressWarnings(obj.(*networkingv1.Ingress))
}

// ValidateUpdate validates an Ingress update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateIngressUpdate(obj.(*networkingv1.Ingress), old.(*networkingv1.Ingress))
}

// StatusStrategy is the ingresses/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the /status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("networking.k8s.io/v1", "spec")
	return s
}

// PrepareForUpdate keeps the stored spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*networkingv1.Ingress).Spec = old.(*networkingv1.Ingress).Spec
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateIngressStatusUpdate(obj.(*networkingv1.Ingress), old.(*networkingv1.Ingress))
}

// WarningsOnUpdate warns about load balancer IPs in a non-canonical form.
func (StatusStrategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return validation.IngressStatusWarnings(obj.(*networkingv1.Ingress))
}

// GetAttrs returns an Ingress's labels and metadata fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Meta(o, true) })

// Predicate matches Ingresses against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints Ingresses as kubectl get ingress does.
var Table = base.Table[*networkingv1.Ingress]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Class", "The name of the IngressClass resource that should be used for additional configuration"),
		base.Col("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
		base.Col("Address", "Address is a list containing ingress points for the load-balancer"),
		base.Col("Ports", "Ports of TLS configurations that open"),
		base.AgeColumn,
	},
	Row: func(ing *networkingv1.Ingress, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
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
