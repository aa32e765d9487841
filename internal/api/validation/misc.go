package validation

import (
	"fmt"
	"net/netip"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateLease validates a coordination.k8s.io lease: leaseDurationSeconds
// > 0 and leaseTransitions ≥ 0 when set.
func ValidateLease(l *coordinationv1.Lease) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&l.ObjectMeta, true, DNSSubdomainName, metadataPath)
	specPath := field.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(specPath.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := l.Spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(specPath.Child("leaseTransitions"), *t, isNegativeErrorMsg))
	}
	if l.Spec.Strategy != nil && *l.Spec.Strategy != coordinationv1.OldestEmulationVersion {
		errs = append(errs, validateQualifiedName(string(*l.Spec.Strategy), specPath.Child("strategy"))...)
	}
	if l.Spec.PreferredHolder != nil && *l.Spec.PreferredHolder != "" && l.Spec.Strategy == nil {
		errs = append(errs, field.Forbidden(specPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// ValidateLeaseUpdate validates a lease update.
func ValidateLeaseUpdate(newL, oldL *coordinationv1.Lease) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newL.ObjectMeta, &oldL.ObjectMeta, metadataPath)
	return append(errs, ValidateLease(newL)...)
}

// ValidateEventsV1Event validates an events.k8s.io/v1 event: the
// new-style event rules (eventTime, reportingController,
// reportingInstance, action, reason, note length) with that API's field
// names, and regarding.namespace matching the event's namespace.
func ValidateEventsV1Event(e *eventsv1.Event) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&e.ObjectMeta, true, DNSSubdomainName, metadataPath)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	errs = append(errs, validateEventSeries(e.Series != nil, e.Series != nil && e.Series.Count < 2, e.Series != nil && e.Series.LastObservedTime.IsZero(), field.NewPath("series"))...)
	if e.Regarding.Namespace == "" {
		if e.Namespace != v1.NamespaceDefault && e.Namespace != "kube-system" {
			errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), e.Regarding.Namespace, "does not match event.namespace"))
		}
	}
	if e.Type != "" && e.Type != v1.EventTypeNormal && e.Type != v1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	errs = append(errs, validateNewStyleEvent(e.ReportingController, e.ReportingInstance, e.Action, e.Reason, e.Note, field.NewPath("note"))...)
	return errs
}

// ValidateEventsV1EventUpdate: identity fields of an events.k8s.io event do
// not change; series, note and the deprecated counters may.
func ValidateEventsV1EventUpdate(newE, oldE *eventsv1.Event) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newE.ObjectMeta, &oldE.ObjectMeta, metadataPath)
	errs = append(errs, ValidateEventsV1Event(newE)...)
	for _, f := range []struct {
		path     string
		new, old interface{}
	}{
		{"regarding", newE.Regarding, oldE.Regarding},
		{"reason", newE.Reason, oldE.Reason},
		{"type", newE.Type, oldE.Type},
		{"eventTime", newE.EventTime, oldE.EventTime},
		{"action", newE.Action, oldE.Action},
		{"related", newE.Related, oldE.Related},
		{"reportingController", newE.ReportingController, oldE.ReportingController},
		{"reportingInstance", newE.ReportingInstance, oldE.ReportingInstance},
	} {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(f.new, f.old, field.NewPath(f.path))...)
	}
	return errs
}

// Limits upstream puts on endpoint slices.
const (
	maxEndpointsPerSlice = 1000
	maxAddressesPerEP    = 100
	maxPortsPerSlice     = 20000
)

// ValidateEndpointSlice validates a discovery.k8s.io endpoint slice: a
// supported addressType, endpoints with 1–100 addresses valid for that
// type, valid nodeName/hostname, ports with unique valid names, supported
// protocols and valid numbers.
func ValidateEndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&es.ObjectMeta, true, DNSSubdomainName, metadataPath)
	switch es.AddressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	case "":
		errs = append(errs, field.Required(field.NewPath("addressType"), ""))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), es.AddressType, []string{string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6), string(discoveryv1.AddressTypeFQDN)}))
	}
	epsPath := field.NewPath("endpoints")
	if len(es.Endpoints) > maxEndpointsPerSlice {
		errs = append(errs, field.TooMany(epsPath, len(es.Endpoints), maxEndpointsPerSlice))
	}
	for i, ep := range es.Endpoints {
		p := epsPath.Index(i)
		ap := p.Child("addresses")
		if len(ep.Addresses) == 0 {
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxAddressesPerEP {
			errs = append(errs, field.TooMany(ap, len(ep.Addresses), maxAddressesPerEP))
		}
		for j, a := range ep.Addresses {
			switch es.AddressType {
			case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
				ipErrs := validation.IsValidIP(ap.Index(j), a)
				errs = append(errs, ipErrs...)
				if len(ipErrs) == 0 {
					if addr, _ := netip.ParseAddr(a); addr.Is4() != (es.AddressType == discoveryv1.AddressTypeIPv4) {
						errs = append(errs, field.Invalid(ap.Index(j), a, fmt.Sprintf("must be an %s address", es.AddressType)))
					}
				}
			case discoveryv1.AddressTypeFQDN:
				errs = append(errs, validation.IsFullyQualifiedDomainName(ap.Index(j), a)...)
			}
		}
		if ep.NodeName != nil {
			errs = append(errs, validateNodeName(*ep.NodeName, p.Child("nodeName"))...)
		}
		if ep.Hostname != nil {
			errs = append(errs, validateDNS1123Label(*ep.Hostname, p.Child("hostname"))...)
		}
	}
	portsPath := field.NewPath("ports")
	if len(es.Ports) > maxPortsPerSlice {
		errs = append(errs, field.TooMany(portsPath, len(es.Ports), maxPortsPerSlice))
	}
	names := sets.New[string]()
	for i, port := range es.Ports {
		p := portsPath.Index(i)
		if port.Name != nil {
			if *port.Name != "" {
				errs = append(errs, validateDNS1123Label(*port.Name, p.Child("name"))...)
			}
			if names.Has(*port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), *port.Name))
			}
			names.Insert(*port.Name)
		}
		if port.Protocol == nil {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else if !supportedPortProtocols.Has(string(*port.Protocol)) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), *port.Protocol, sets.List(supportedPortProtocols)))
		}
		if port.Port != nil {
			errs = append(errs, validatePortNum(*port.Port, p.Child("port"))...)
		}
		if port.AppProtocol != nil {
			errs = append(errs, validateQualifiedName(*port.AppProtocol, p.Child("appProtocol"))...)
		}
	}
	return errs
}

// ValidateEndpointSliceUpdate: the new slice must be valid and addressType
// is immutable.
func ValidateEndpointSliceUpdate(newES, oldES *discoveryv1.EndpointSlice) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newES.ObjectMeta, &oldES.ObjectMeta, metadataPath)
	errs = append(errs, ValidateEndpointSlice(newES)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(newES.AddressType, oldES.AddressType, field.NewPath("addressType"))...)
}

// ValidateEndpoints validates core/v1 endpoints: each subset has addresses
// (ready or not) with valid IPs, hostnames and node names, and ports with
// valid numbers and protocols, named when there is more than one.
func ValidateEndpoints(ep *v1.Endpoints) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&ep.ObjectMeta, true, DNSSubdomainName, metadataPath)
	subsetsPath := field.NewPath("subsets")
	for i, ss := range ep.Subsets {
		p := subsetsPath.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j, a := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(a, p.Child("addresses").Index(j))...)
		}
		for j, a := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(a, p.Child("notReadyAddresses").Index(j))...)
		}
		names := sets.New[string]()
		for j, port := range ss.Ports {
			pp := p.Child("ports").Index(j)
			if len(ss.Ports) > 1 && port.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			} else if port.Name != "" {
				errs = append(errs, validateDNS1123Label(port.Name, pp.Child("name"))...)
				if names.Has(port.Name) {
					errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
				}
				names.Insert(port.Name)
			}
			errs = append(errs, validatePortNum(port.Port, pp.Child("port"))...)
			if port.Protocol == "" {
				errs = append(errs, field.Required(pp.Child("protocol"), ""))
			} else if !supportedPortProtocols.Has(string(port.Protocol)) {
				errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol, sets.List(supportedPortProtocols)))
			}
		}
	}
	return errs
}

func validateEndpointAddress(a v1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	errs := validation.IsValidIP(fldPath.Child("ip"), a.IP)
	if a.Hostname != "" {
		errs = append(errs, validateDNS1123Label(a.Hostname, fldPath.Child("hostname"))...)
	}
	if a.NodeName != nil {
		errs = append(errs, validateNodeName(*a.NodeName, fldPath.Child("nodeName"))...)
	}
	return errs
}

// ValidateEndpointsUpdate validates an endpoints update.
func ValidateEndpointsUpdate(newEP, oldEP *v1.Endpoints) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newEP.ObjectMeta, &oldEP.ObjectMeta, metadataPath)
	return append(errs, ValidateEndpoints(newEP)...)
}
