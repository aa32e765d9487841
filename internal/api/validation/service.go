package validation

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxClientIPServiceAffinitySeconds is the longest ClientIP affinity (a day).
const maxClientIPServiceAffinitySeconds = 86400

var (
	supportedServiceTypes = []string{string(v1.ServiceTypeClusterIP), string(v1.ServiceTypeNodePort), string(v1.ServiceTypeLoadBalancer), string(v1.ServiceTypeExternalName)}
	supportedAffinities   = []string{string(v1.ServiceAffinityClientIP), string(v1.ServiceAffinityNone)}
	supportedIPFamilyPols = []string{string(v1.IPFamilyPolicySingleStack), string(v1.IPFamilyPolicyPreferDualStack), string(v1.IPFamilyPolicyRequireDualStack)}
)

// ValidateService validates a service: a DNS-1035 label name, a supported
// type, ports (required except for ExternalName, named when more than
// one, unique names, unique port/protocol pairs, no nodePort on ClusterIP
// services, valid targetPort), clusterIP/clusterIPs, session affinity,
// external IPs, selector labels and traffic policies.
func ValidateService(svc *v1.Service) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&svc.ObjectMeta, true, DNS1035LabelName, metadataPath)
	specPath := field.NewPath("spec")
	spec := &svc.Spec

	switch spec.Type {
	case v1.ServiceTypeClusterIP, v1.ServiceTypeNodePort, v1.ServiceTypeLoadBalancer, v1.ServiceTypeExternalName:
	case "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(specPath.Child("type"), spec.Type, supportedServiceTypes))
	}

	portsPath := specPath.Child("ports")
	if spec.Type == v1.ServiceTypeExternalName {
		if spec.ClusterIP != "" {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIP"), "may not be set for ExternalName services"))
		}
		name := strings.TrimSuffix(spec.ExternalName, ".")
		if spec.ExternalName == "" {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(specPath.Child("externalName"), spec.ExternalName, msg))
			}
		}
	} else if len(spec.Ports) == 0 && spec.ClusterIP != v1.ClusterIPNone {
		errs = append(errs, field.Required(portsPath, ""))
	}

	names := sets.New[string]()
	pairs := sets.New[string]()
	nodePorts := sets.New[string]()
	for i, p := range spec.Ports {
		pp := portsPath.Index(i)
		errs = append(errs, validateServicePort(&p, len(spec.Ports) > 1, names, pp)...)
		key := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if pairs.Has(key) {
			errs = append(errs, field.Duplicate(pp, key))
		}
		pairs.Insert(key)
		if p.NodePort != 0 {
			if spec.Type == v1.ServiceTypeClusterIP {
				errs = append(errs, field.Forbidden(pp.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			} else {
				errs = append(errs, validatePortNum(p.NodePort, pp.Child("nodePort"))...)
				nk := fmt.Sprintf("%d/%s", p.NodePort, p.Protocol)
				if nodePorts.Has(nk) {
					errs = append(errs, field.Duplicate(pp.Child("nodePort"), p.NodePort))
				}
				nodePorts.Insert(nk)
			}
		}
	}

	errs = append(errs, validateClusterIPs(svc, specPath)...)

	switch spec.SessionAffinity {
	case v1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"), fmt.Sprintf("must not be set when session affinity is %s", v1.ServiceAffinityNone)))
		}
	case v1.ServiceAffinityClientIP:
		c := spec.SessionAffinityConfig
		p := specPath.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds")
		if c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			errs = append(errs, field.Required(p, ""))
		} else if t := *c.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPServiceAffinitySeconds {
			errs = append(errs, field.Invalid(p, t, fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPServiceAffinitySeconds)))
		}
	case "":
		errs = append(errs, field.Required(specPath.Child("sessionAffinity"), ""))
	default:
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity, supportedAffinities))
	}

	for i, ip := range spec.ExternalIPs {
		errs = append(errs, validation.IsValidIP(specPath.Child("externalIPs").Index(i), ip)...)
	}
	errs = append(errs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)

	externallyAccessible := spec.Type == v1.ServiceTypeNodePort || spec.Type == v1.ServiceTypeLoadBalancer ||
		(spec.Type == v1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	etp := specPath.Child("externalTrafficPolicy")
	switch {
	case !externallyAccessible && spec.ExternalTrafficPolicy != "":
		errs = append(errs, field.Invalid(etp, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
	case externallyAccessible && spec.ExternalTrafficPolicy == "":
		errs = append(errs, field.Required(etp, ""))
	case externallyAccessible && spec.ExternalTrafficPolicy != v1.ServiceExternalTrafficPolicyCluster && spec.ExternalTrafficPolicy != v1.ServiceExternalTrafficPolicyLocal:
		errs = append(errs, field.NotSupported(etp, spec.ExternalTrafficPolicy, []string{string(v1.ServiceExternalTrafficPolicyCluster), string(v1.ServiceExternalTrafficPolicyLocal)}))
	}
	if spec.HealthCheckNodePort != 0 {
		if spec.Type != v1.ServiceTypeLoadBalancer || spec.ExternalTrafficPolicy != v1.ServiceExternalTrafficPolicyLocal {
			errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		} else {
			errs = append(errs, validatePortNum(spec.HealthCheckNodePort, specPath.Child("healthCheckNodePort"))...)
		}
	}
	itp := specPath.Child("internalTrafficPolicy")
	if spec.Type != v1.ServiceTypeExternalName {
		switch {
		case spec.InternalTrafficPolicy == nil:
			errs = append(errs, field.Required(itp, ""))
		case *spec.InternalTrafficPolicy != v1.ServiceInternalTrafficPolicyCluster && *spec.InternalTrafficPolicy != v1.ServiceInternalTrafficPolicyLocal:
			errs = append(errs, field.NotSupported(itp, *spec.InternalTrafficPolicy, []string{string(v1.ServiceInternalTrafficPolicyCluster), string(v1.ServiceInternalTrafficPolicyLocal)}))
		}
	}
	if p := spec.IPFamilyPolicy; p != nil && *p != v1.IPFamilyPolicySingleStack && *p != v1.IPFamilyPolicyPreferDualStack && *p != v1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *p, supportedIPFamilyPols))
	}
	for i, f := range spec.IPFamilies {
		if f != v1.IPv4Protocol && f != v1.IPv6Protocol {
			errs = append(errs, field.NotSupported(specPath.Child("ipFamilies").Index(i), f, []string{string(v1.IPv4Protocol), string(v1.IPv6Protocol)}))
		}
	}
	if spec.LoadBalancerClass != nil && spec.Type != v1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(specPath.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
	}
	return errs
}

func validateServicePort(p *v1.ServicePort, requireName bool, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if p.Name != "" {
		errs = append(errs, validateDNS1123Label(p.Name, fldPath.Child("name"))...)
		if names.Has(p.Name) {
			errs = append(errs, field.Duplicate(fldPath.Child("name"), p.Name))
		}
		names.Insert(p.Name)
	}
	errs = append(errs, validatePortNum(p.Port, fldPath.Child("port"))...)
	if p.Protocol == "" {
		errs = append(errs, field.Required(fldPath.Child("protocol"), ""))
	} else if !supportedPortProtocols.Has(string(p.Protocol)) {
		errs = append(errs, field.NotSupported(fldPath.Child("protocol"), p.Protocol, sets.List(supportedPortProtocols)))
	}
	errs = append(errs, validatePortNumOrName(p.TargetPort, fldPath.Child("targetPort"))...)
	if p.AppProtocol != nil {
		errs = append(errs, validateQualifiedName(*p.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return errs
}

// clusterIPsOf returns spec.clusterIPs, or [spec.clusterIP] when only that is set.
func clusterIPsOf(svc *v1.Service) []string {
	if len(svc.Spec.ClusterIPs) == 0 && svc.Spec.ClusterIP != "" {
		return []string{svc.Spec.ClusterIP}
	}
	return svc.Spec.ClusterIPs
}

func validateClusterIPs(svc *v1.Service, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	ipsPath := specPath.Child("clusterIPs")
	if spec.ClusterIP != "" && len(spec.ClusterIPs) > 0 && spec.ClusterIPs[0] != spec.ClusterIP {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
	}
	ips := clusterIPsOf(svc)
	if len(ips) > 2 {
		errs = append(errs, field.Invalid(ipsPath, ips, "may only hold up to 2 values"))
	}
	for i, ip := range ips {
		p := ipsPath.Index(i)
		if ip == v1.ClusterIPNone {
			if i > 0 || len(ips) > 1 {
				errs = append(errs, field.Invalid(p, ip, "'None' must be the first and only value"))
			}
			switch spec.Type {
			case v1.ServiceTypeLoadBalancer:
				errs = append(errs, field.Invalid(p, ip, "may not be set to 'None' for LoadBalancer services"))
			case v1.ServiceTypeNodePort:
				errs = append(errs, field.Invalid(p, ip, "may not be set to 'None' for NodePort services"))
			}
			continue
		}
		errs = append(errs, validation.IsValidIP(p, ip)...)
	}
	return errs
}

// ValidateServiceUpdate validates a service update: the new service must be
// valid and an allocated primary cluster IP may neither change nor be unset
// (unless the service is or was of type ExternalName).
func ValidateServiceUpdate(newSvc, oldSvc *v1.Service) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newSvc.ObjectMeta, &oldSvc.ObjectMeta, metadataPath)
	newIPs, oldIPs := clusterIPsOf(newSvc), clusterIPsOf(oldSvc)
	if newSvc.Spec.Type != v1.ServiceTypeExternalName && oldSvc.Spec.Type != v1.ServiceTypeExternalName && len(oldIPs) > 0 {
		p := field.NewPath("spec", "clusterIPs").Index(0)
		switch {
		case len(newIPs) == 0:
			errs = append(errs, field.Invalid(p, newIPs, "primary clusterIP can not be unset"))
		case newIPs[0] != oldIPs[0]:
			errs = append(errs, field.Invalid(p, newIPs, "may not change once set"))
		}
	}
	return append(errs, ValidateService(newSvc)...)
}

// ValidateServiceStatusUpdate validates a services/status update: load
// balancer ingress IPs must be valid.
func ValidateServiceStatusUpdate(newSvc, oldSvc *v1.Service) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newSvc.ObjectMeta, &oldSvc.ObjectMeta, metadataPath)
	p := field.NewPath("status", "loadBalancer", "ingress")
	for i, ing := range newSvc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			errs = append(errs, validation.IsValidIP(p.Index(i).Child("ip"), ing.IP)...)
		}
		if ing.Hostname != "" {
			errs = append(errs, validateDNS1123Subdomain(ing.Hostname, p.Index(i).Child("hostname"))...)
		}
	}
	return errs
}
