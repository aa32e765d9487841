// Package service is the registry strategy for core/v1 services: status
// cleared on create and kept apart, clusterIP/clusterIPs kept consistent,
// create-on-update (as upstream), field selectors and the table (NAME TYPE
// CLUSTER-IP EXTERNAL-IP PORT(S) AGE, wide: SELECTOR).
package service

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"berth/controlplane/registry/base"
	"berth/internal/api/fieldsets"
	"berth/internal/api/validation"
)

// Strategy is the services strategy.
type Strategy struct{ base.Strategy }

// NewStrategy returns the services strategy; a PUT may create a service.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	s := Strategy{base.New(typer, true)}
	s.CreateOnUpdate = true
	s.Reset = base.Reset("v1", "status")
	return s
}

// PrepareForCreate clears the status and aligns clusterIP with clusterIPs.
// Allocating a cluster IP (and node ports) is the REST layer's job, as upstream.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	svc := obj.(*v1.Service)
	svc.Status = v1.ServiceStatus{}
	SyncClusterIPs(svc)
}

// PrepareForUpdate keeps the stored status.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	svc := obj.(*v1.Service)
	svc.Status = old.(*v1.Service).Status
	SyncClusterIPs(svc)
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

// Validate validates a new service.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateService(obj.(*v1.Service))
}

// ValidateUpdate validates a service update (clusterIP immutable).
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateServiceUpdate(obj.(*v1.Service), old.(*v1.Service))
}

// StatusStrategy is the services/status strategy.
type StatusStrategy struct{ Strategy }

// NewStatusStrategy returns the services/status strategy.
func NewStatusStrategy(typer runtime.ObjectTyper) StatusStrategy {
	s := StatusStrategy{NewStrategy(typer)}
	s.Reset = base.Reset("v1", "spec")
	return s
}

// PrepareForUpdate keeps the spec.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*v1.Service).Spec = old.(*v1.Service).Spec
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateServiceStatusUpdate(obj.(*v1.Service), old.(*v1.Service))
}

// GetAttrs returns a service's labels and selectable fields.
var GetAttrs = base.Attrs(func(o runtime.Object) fields.Set { return fieldsets.Service(o.(*v1.Service)) })

// Predicate matches services against label and field selectors.
var Predicate = base.Predicate(GetAttrs)

// Table prints services as kubectl get services does.
var Table = base.Table[*v1.Service]{
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
