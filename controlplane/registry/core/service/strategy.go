// Package service describes core/v1 services to the registry: status
// cleared on create and kept apart, clusterIP/clusterIPs kept consistent,
// create-on-update (as upstream), field selectors and the table (NAME TYPE
// CLUSTER-IP EXTERNAL-IP PORT(S) AGE, wide: SELECTOR).
package service

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Kind describes services; a PUT may create one, as upstream. Allocating
// a cluster IP (and node ports) is the REST layer's job, as upstream (the
// generic Store calls BeginCreate before the strategy).
var Kind = base.Kind[*v1.Service]{
	APIVersion: "v1", Namespaced: true, CreateOnUpdate: true,
	Status: true,
	PrepareCreate: func(_ context.Context, svc *v1.Service) {
		SyncClusterIPs(svc)
		DefaultIPFamilies(svc)
	},
	PrepareUpdate:        prepareUpdate,
	Validate:             validation.ValidateService,
	ValidateUpdate:       validation.ValidateServiceUpdate, // clusterIP immutable
	ValidateStatusUpdate: validation.ValidateServiceStatusUpdate,
	Fields:               fieldsets.Service,
	Table:                table,
}

// DefaultIPFamilies sets ipFamilyPolicy (SingleStack; RequireDualStack for
// headless services without a selector) and ipFamilies (the family of the
// cluster IP, IPv4 when there is none) on services that are not
// ExternalName, as a single-stack kube-apiserver does.
func DefaultIPFamilies(svc *v1.Service) {
	if svc.Spec.Type == v1.ServiceTypeExternalName {
		return
	}
	headless := svc.Spec.ClusterIP == v1.ClusterIPNone
	if svc.Spec.IPFamilyPolicy == nil {
		policy := v1.IPFamilyPolicySingleStack
		if headless && len(svc.Spec.Selector) == 0 {
			policy = v1.IPFamilyPolicyRequireDualStack
		}
		svc.Spec.IPFamilyPolicy = &policy
	}
	if len(svc.Spec.IPFamilies) == 0 {
		family := v1.IPv4Protocol
		if ip := net.ParseIP(svc.Spec.ClusterIP); ip != nil && ip.To4() == nil {
			family = v1.IPv6Protocol
		}
		svc.Spec.IPFamilies = []v1.IPFamily{family}
	}
}

// prepareUpdate aligns clusterIP with clusterIPs and, when the type
// changes, drops the fields the new type cannot have that the client left
// as they were (node ports, health check port, load balancer fields,
// cluster IPs for ExternalName), as upstream does, so kubectl apply can
// change a service's type.
func prepareUpdate(svc, oldSvc *v1.Service) {
	SyncClusterIPs(svc)
	keepAllocatedValues(svc, oldSvc)
	dropTypeDependentFields(svc, oldSvc)
}

func needsClusterIP(svc *v1.Service) bool { return svc.Spec.Type != v1.ServiceTypeExternalName }

func needsNodePorts(svc *v1.Service) bool {
	return svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer
}

// keepAllocatedValues carries the allocated cluster IPs, IP family fields
// and node ports over to an update that left them empty (a PUT of the
// original manifest), as upstream's service REST does.
func keepAllocatedValues(svc, old *v1.Service) {
	if needsClusterIP(old) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
			svc.Spec.ClusterIPs = append([]string(nil), old.Spec.ClusterIPs...)
		}
		if svc.Spec.IPFamilyPolicy == nil {
			svc.Spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
		}
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = append([]v1.IPFamily(nil), old.Spec.IPFamilies...)
		}
	}
	if needsNodePorts(old) && needsNodePorts(svc) {
		used := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				used[p.NodePort] = true
			}
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 && !used[byName[p.Name]] {
				p.NodePort = byName[p.Name]
			}
		}
		if svc.Spec.HealthCheckNodePort == 0 {
			svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
		}
	}
}

func dropTypeDependentFields(svc, old *v1.Service) {
	if svc.Spec.Type == old.Spec.Type {
		return
	}
	t := svc.Spec.Type
	if t != v1.ServiceTypeNodePort && t != v1.ServiceTypeLoadBalancer {
		for i := range svc.Spec.Ports {
			if i < len(old.Spec.Ports) && svc.Spec.Ports[i].NodePort == old.Spec.Ports[i].NodePort {
				svc.Spec.Ports[i].NodePort = 0
			}
		}
	}
	if t != v1.ServiceTypeLoadBalancer {
		if svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
			svc.Spec.HealthCheckNodePort = 0
		}
		if ptrEqual(svc.Spec.AllocateLoadBalancerNodePorts, old.Spec.AllocateLoadBalancerNodePorts) {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if ptrEqual(svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
			svc.Spec.LoadBalancerClass = nil
		}
	}
	externallyAccessible := t == v1.ServiceTypeNodePort || t == v1.ServiceTypeLoadBalancer || (t == v1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
	if !externallyAccessible && svc.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
	if t == v1.ServiceTypeExternalName {
		if svc.Spec.ClusterIP == old.Spec.ClusterIP {
			svc.Spec.ClusterIP = ""
		}
		if sameStrings(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) {
			svc.Spec.ClusterIPs = nil
		}
		if ptrEqual(svc.Spec.IPFamilyPolicy, old.Spec.IPFamilyPolicy) {
			svc.Spec.IPFamilyPolicy = nil
		}
		if len(svc.Spec.IPFamilies) == len(old.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if ptrEqual(svc.Spec.InternalTrafficPolicy, old.Spec.InternalTrafficPolicy) {
			svc.Spec.InternalTrafficPolicy = nil
		}
	}
}

func ptrEqual[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// SyncClusterIPs fills clusterIPs from clusterIP or clusterIP from
// clusterIPs[0], as upstream's v1 conversion does.
func SyncClusterIPs(svc *v1.Service) {
	if len(svc.Spec.ClusterIPs) == 0 && svc.Spec.ClusterIP != "" {
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) > 0 {
		svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	}
}

// table prints services as kubectl get services does.
var table = base.Table[*v1.Service]{
	Columns: []metav1.TableColumnDefinition{
		base.NameColumn,
		base.Col("Type", v1.ServiceSpec{}.SwaggerDoc()["type"]),
		base.Col("Cluster-IP", v1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
		base.Col("External-IP", v1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
		base.Col("Port(s)", v1.ServiceSpec{}.SwaggerDoc()["ports"]),
		base.AgeColumn,
		base.Wide(base.Col("Selector", v1.ServiceSpec{}.SwaggerDoc()["selector"])),
	},
	Row: func(s *v1.Service, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		clusterIP := "<none>"
		if len(s.Spec.ClusterIPs) > 0 {
			clusterIP = s.Spec.ClusterIPs[0]
		} else if s.Spec.ClusterIP != "" {
			clusterIP = s.Spec.ClusterIP
		}
		return []interface{}{s.Name, string(s.Spec.Type), clusterIP, ExternalIP(s), base.OrNone(Ports(s.Spec.Ports)),
			base.Age(s.CreationTimestamp, now), base.OrNone(labels.FormatLabels(s.Spec.Selector))}, nil
	},
}

// ExternalIP is the EXTERNAL-IP column.
func ExternalIP(s *v1.Service) string {
	switch s.Spec.Type {
	case v1.ServiceTypeClusterIP, v1.ServiceTypeNodePort:
		if len(s.Spec.ExternalIPs) > 0 {
			return strings.Join(s.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case v1.ServiceTypeLoadBalancer:
		var ips []string
		for _, ing := range s.Status.LoadBalancer.Ingress {
			if ing.IP != "" {
				ips = append(ips, ing.IP)
			} else if ing.Hostname != "" {
				ips = append(ips, ing.Hostname)
			}
		}
		ips = append(ips, s.Spec.ExternalIPs...)
		if len(ips) > 0 {
			return strings.Join(ips, ",")
		}
		return "<pending>"
	case v1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	}
	return "<unknown>"
}

// Ports is the PORT(S) column: port[:nodePort]/protocol, comma-separated.
func Ports(ports []v1.ServicePort) string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		if p.NodePort > 0 {
			out = append(out, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
		} else {
			out = append(out, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
	}
	return strings.Join(out, ",")
}
