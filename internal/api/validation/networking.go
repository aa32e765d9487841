package validation

import (
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// IngressClassAnnotation is the deprecated annotation naming an Ingress's
// class (spec.ingressClassName replaces it).
const IngressClassAnnotation = "kubernetes.io/ingress.class"

// maxIngressClassControllerLen bounds spec.controller of an IngressClass.
const maxIngressClassControllerLen = 250

// Path types an Ingress path may have, and what an Exact or Prefix path
// may not contain or end with (upstream's lists).
var (
	ingressPathTypes = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}
	badPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	badPathSuffixes  = []string{"/..", "/."}
	parameterScopes  = []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}
)

// ingressOptions relax the checks for values an older object already
// holds, as upstream keeps objects stored before a rule tightened valid.
type ingressOptions struct {
	// allowInvalidSecretName accepts spec.tls[*].secretName values that
	// are not Secret names.
	allowInvalidSecretName bool
	// allowInvalidWildcardHostRule skips the rule value checks of rules
	// with a wildcard host.
	allowInvalidWildcardHostRule bool
	// allowRelaxedServiceName accepts DNS-1123 (not only DNS-1035) labels
	// as backend service names.
	allowRelaxedServiceName bool
}

// ValidateIngress validates a new networking.k8s.io/v1 Ingress: its
// metadata, spec (rules, hosts, paths, backends, TLS, class name) and, when
// both are set, that the deprecated class annotation agrees with
// spec.ingressClassName.
func ValidateIngress(ing *networkingv1.Ingress) field.ErrorList {
	errs := validateIngress(ing, ingressOptions{})
	if class, ok := ing.Annotations[IngressClassAnnotation]; ok && ing.Spec.IngressClassName != nil && class != *ing.Spec.IngressClassName {
		errs = append(errs, field.Invalid(field.NewPath("annotations").Child(IngressClassAnnotation), class, "must match `ingressClassName` when both are specified"))
	}
	return errs
}

// ValidateIngressUpdate validates an Ingress update: the rules of a new
// Ingress, relaxed where the old object already broke them.
func ValidateIngressUpdate(ing, old *networkingv1.Ingress) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ing.ObjectMeta, &old.ObjectMeta, metadataPath)
	return append(errs, validateIngress(ing, ingressOptions{
		allowInvalidSecretName:       hasInvalidSecretName(old),
		allowInvalidWildcardHostRule: hasInvalidWildcardRule(old),
		allowRelaxedServiceName:      hasRelaxedServiceName(old),
	})...)
}

// ValidateIngressStatusUpdate validates an ingresses/status update: the
// load balancer's IPs and host names.
func ValidateIngressStatusUpdate(ing, old *networkingv1.Ingress) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ing.ObjectMeta, &old.ObjectMeta, metadataPath)
	var oldIPs []string
	for _, lb := range old.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			oldIPs = append(oldIPs, lb.IP)
		}
	}
	p := field.NewPath("status", "loadBalancer", "ingress")
	for i, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(p.Index(i).Child("ip"), lb.IP, false, oldIPs)...)
		}
		if lb.Hostname != "" {
			errs = append(errs, validateDNS1123Subdomain(lb.Hostname, p.Index(i).Child("hostname"))...)
			if netutils.ParseIPSloppy(lb.Hostname) != nil {
				errs = append(errs, field.Invalid(p.Index(i).Child("hostname"), lb.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

// IngressStatusWarnings warns about load balancer IPs written in a
// non-canonical form, as upstream.
func IngressStatusWarnings(ing *networkingv1.Ingress) []string {
	var out []string
	p := field.NewPath("status", "loadBalancer", "ingress")
	for i, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			out = append(out, validation.GetWarningsForIP(p.Index(i), lb.IP)...)
		}
	}
	return out
}

// IngressWarnings warns when only the deprecated class annotation names
// the class.
func IngressWarnings(ing *networkingv1.Ingress) []string {
	if _, ok := ing.Annotations[IngressClassAnnotation]; ok && ing.Spec.IngressClassName == nil {
		return []string{fmt.Sprintf("annotation %q is deprecated, please use 'spec.ingressClassName' instead", IngressClassAnnotation)}
	}
	return nil
}

func validateIngress(ing *networkingv1.Ingress, opts ingressOptions) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&ing.ObjectMeta, true, DNSSubdomainName, metadataPath)
	return append(errs, validateIngressSpec(&ing.Spec, field.NewPath("spec"), opts)...)
}

func validateIngressSpec(spec *networkingv1.IngressSpec, p *field.Path, opts ingressOptions) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(p, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(spec.DefaultBackend, p.Child("defaultBackend"), opts)...)
	}
	for i, rule := range spec.Rules {
		errs = append(errs, validateIngressRule(&rule, p.Child("rules").Index(i), opts)...)
	}
	for i, tls := range spec.TLS {
		tp := p.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			errs = append(errs, validateIngressHost(host, tp.Child("hosts").Index(j))...)
		}
		if !opts.allowInvalidSecretName {
			for _, msg := range tlsSecretNameErrors(tls.SecretName) {
				errs = append(errs, field.Invalid(tp.Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if spec.IngressClassName != nil {
		for _, msg := range DNSSubdomainName(*spec.IngressClassName, false) {
			errs = append(errs, field.Invalid(p.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
	}
	return errs
}

// validateIngressHost checks a host name, which may be a wildcard
// ("*.example.com").
func validateIngressHost(host string, p *field.Path) field.ErrorList {
	check := validation.IsDNS1123Subdomain
	if strings.Contains(host, "*") {
		check = validation.IsWildcardDNS1123Subdomain
	}
	var errs field.ErrorList
	for _, msg := range check(host) {
		errs = append(errs, field.Invalid(p, host, msg))
	}
	return errs
}

func validateIngressRule(rule *networkingv1.IngressRule, p *field.Path, opts ingressOptions) field.ErrorList {
	var errs field.ErrorList
	wildcard := strings.Contains(rule.Host, "*")
	if rule.Host != "" {
		if netutils.ParseIPSloppy(rule.Host) != nil {
			errs = append(errs, field.Invalid(p.Child("host"), rule.Host, "must be a DNS name, not an IP address"))
		}
		errs = append(errs, validateIngressHost(rule.Host, p.Child("host"))...)
	}
	if wildcard && opts.allowInvalidWildcardHostRule {
		return errs
	}
	return append(errs, validateIngressRuleValue(&rule.IngressRuleValue, p, opts)...)
}

func validateIngressRuleValue(v *networkingv1.IngressRuleValue, p *field.Path, opts ingressOptions) field.ErrorList {
	if v.HTTP == nil {
		return nil
	}
	var errs field.ErrorList
	hp := p.Child("http")
	if len(v.HTTP.Paths) == 0 {
		errs = append(errs, field.Required(hp.Child("paths"), ""))
	}
	for i := range v.HTTP.Paths {
		errs = append(errs, validateIngressPath(&v.HTTP.Paths[i], hp.Child("paths").Index(i), opts)...)
	}
	return errs
}

func validateIngressPath(path *networkingv1.HTTPIngressPath, p *field.Path, opts ingressOptions) field.ErrorList {
	if path.PathType == nil {
		return field.ErrorList{field.Required(p.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	pp := p.Child("path")
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(pp, path.Path, "must be an absolute path"))
		}
		for _, seq := range badPathSequences {
			if strings.Contains(path.Path, seq) {
				errs = append(errs, field.Invalid(pp, path.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range badPathSuffixes {
			if strings.HasSuffix(path.Path, suffix) {
				errs = append(errs, field.Invalid(pp, path.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(pp, path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("pathType"), *path.PathType, ingressPathTypes))
	}
	return append(errs, validateIngressBackend(&path.Backend, p.Child("backend"), opts)...)
}

// validateIngressBackend checks a backend: a Service (name and a port name
// or number) or a typed resource reference, exactly one of them.
func validateIngressBackend(b *networkingv1.IngressBackend, p *field.Path, opts ingressOptions) field.ErrorList {
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(p, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		return validateTypedReference(b.Resource.APIGroup, b.Resource.Kind, b.Resource.Name, p.Child("resource"))
	case b.Service == nil:
		return field.ErrorList{field.Invalid(p, "", "resource or service backend is required")}
	}
	var errs field.ErrorList
	svc, sp := b.Service, p.Child("service")
	if svc.Name == "" {
		errs = append(errs, field.Required(sp.Child("name"), ""))
	} else {
		check := DNS1035LabelName
		if opts.allowRelaxedServiceName {
			check = DNSLabelName
		}
		for _, msg := range check(svc.Name, false) {
			errs = append(errs, field.Invalid(sp.Child("name"), svc.Name, msg))
		}
	}
	switch byName, byNumber := svc.Port.Name != "", svc.Port.Number != 0; {
	case byName && byNumber:
		errs = append(errs, field.Invalid(p, "", "cannot set both port name & port number"))
	case byName:
		for _, msg := range validation.IsValidPortName(svc.Port.Name) {
			errs = append(errs, field.Invalid(sp.Child("port", "name"), svc.Port.Name, msg))
		}
	case byNumber:
		for _, msg := range validation.IsValidPortNum(int(svc.Port.Number)) {
			errs = append(errs, field.Invalid(sp.Child("port", "number"), svc.Port.Number, msg))
		}
	default:
		errs = append(errs, field.Required(p, "port name or number is required"))
	}
	return errs
}

// validateTypedReference checks an apiGroup/kind/name reference (a
// resource backend, an IngressClass's parameters).
func validateTypedReference(apiGroup *string, kind, name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if apiGroup != nil {
		errs = append(errs, validateDNS1123Subdomain(*apiGroup, p.Child("apiGroup"))...)
	}
	for _, f := range []struct{ name, value string }{{"kind", kind}, {"name", name}} {
		if f.value == "" {
			errs = append(errs, field.Required(p.Child(f.name), ""))
			continue
		}
		for _, msg := range pathvalidation.IsValidPathSegmentName(f.value) {
			errs = append(errs, field.Invalid(p.Child(f.name), f.value, msg))
		}
	}
	return errs
}

// tlsSecretNameErrors checks a TLS secret name; empty is allowed (the
// controller's default certificate).
func tlsSecretNameErrors(name string) []string {
	if name == "" {
		return nil
	}
	return DNSSubdomainName(name, false)
}

// hasInvalidSecretName reports whether a stored Ingress already has a TLS
// secret name that is not a Secret name.
func hasInvalidSecretName(old *networkingv1.Ingress) bool {
	for _, tls := range old.Spec.TLS {
		if len(tlsSecretNameErrors(tls.SecretName)) > 0 {
			return true
		}
	}
	return false
}

// hasInvalidWildcardRule reports whether a stored Ingress already has a
// wildcard-host rule whose value is invalid.
func hasInvalidWildcardRule(old *networkingv1.Ingress) bool {
	for _, rule := range old.Spec.Rules {
		if strings.Contains(rule.Host, "*") && len(validateIngressRuleValue(&rule.IngressRuleValue, nil, ingressOptions{})) > 0 {
			return true
		}
	}
	return false
}

// hasRelaxedServiceName reports whether a stored Ingress already names a
// backend Service that is a DNS-1123 but not a DNS-1035 label.
func hasRelaxedServiceName(old *networkingv1.Ingress) bool {
	for _, rule := range old.Spec.Rules {
		if rule.HTTP == nil {
			continue
		}
		for _, path := range rule.HTTP.Paths {
			if s := path.Backend.Service; s != nil && len(DNSLabelName(s.Name, false)) == 0 && len(DNS1035LabelName(s.Name, false)) > 0 {
				return true
			}
		}
	}
	return false
}

// ValidateIngressClass validates a networking.k8s.io/v1 IngressClass: a
// domain-prefixed controller name of at most 250 characters and, when
// set, a parameters reference with a valid scope (a namespace exactly
// when the scope is Namespace).
func ValidateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&ic.ObjectMeta, false, DNSSubdomainName, metadataPath)
	sp := field.NewPath("spec")
	if len(ic.Spec.Controller) > maxIngressClassControllerLen {
		errs = append(errs, field.TooLong(sp.Child("controller"), "", maxIngressClassControllerLen))
	}
	errs = append(errs, validation.IsDomainPrefixedPath(sp.Child("controller"), ic.Spec.Controller)...)
	params := ic.Spec.Parameters
	if params == nil {
		return errs
	}
	pp := sp.Child("parameters")
	errs = append(errs, validateTypedReference(params.APIGroup, params.Kind, params.Name, pp)...)
	if params.Scope == nil {
		return append(errs, field.Required(pp.Child("scope"), ""))
	}
	switch *params.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if params.Namespace == nil {
			errs = append(errs, field.Required(pp.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		} else {
			for _, msg := range DNSLabelName(*params.Namespace, false) {
				errs = append(errs, field.Invalid(pp.Child("namespace"), *params.Namespace, msg))
			}
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if params.Namespace != nil {
			errs = append(errs, field.Forbidden(pp.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(pp.Child("scope"), *params.Scope, parameterScopes))
	}
	return errs
}

// ValidateIngressClassUpdate validates an IngressClass update: valid, with
// the controller unchanged.
func ValidateIngressClassUpdate(ic, old *networkingv1.IngressClass) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ic.ObjectMeta, &old.ObjectMeta, metadataPath)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(ic.Spec.Controller, old.Spec.Controller, field.NewPath("spec", "controller"))...)
	return append(errs, ValidateIngressClass(ic)...)
}
