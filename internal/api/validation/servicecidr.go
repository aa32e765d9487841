package validation

import (
	networkingv1 "k8s.io/api/networking/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// IPAddressName checks an IPAddress's name: an IP address in canonical
// form (the name is the address).
func IPAddressName(name string, _ bool) []string {
	var msgs []string
	for _, e := range validation.IsValidIP(&field.Path{}, name) {
		msgs = append(msgs, e.Detail)
	}
	return msgs
}

// ValidateIPAddress validates a networking.k8s.io/v1 IPAddress, as
// upstream: the name is an IP, spec.parentRef names a resource and an
// object.
func ValidateIPAddress(ip *networkingv1.IPAddress) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&ip.ObjectMeta, false, IPAddressName, metadataPath)
	return append(errs, validateParentRef(ip.Spec.ParentRef, field.NewPath("spec"))...)
}

func validateParentRef(ref *networkingv1.ParentReference, sp *field.Path) field.ErrorList {
	if ref == nil {
		return field.ErrorList{field.Required(sp.Child("parentRef"), "")}
	}
	var errs field.ErrorList
	p := sp.Child("parentRef")
	// The core group (Services') is "", so group cannot be required.
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(p.Child("group"), ref.Group, msg))
		}
	}
	segment := func(name, value string, required bool) {
		if value == "" {
			if required {
				errs = append(errs, field.Required(p.Child(name), ""))
			}
			return
		}
		for _, msg := range pathvalidation.IsValidPathSegmentName(value) {
			errs = append(errs, field.Invalid(p.Child(name), value, msg))
		}
	}
	segment("resource", ref.Resource, true)
	segment("name", ref.Name, true)
	segment("namespace", ref.Namespace, false)
	return errs
}

// ValidateIPAddressUpdate validates an IPAddress update: the parent may
// not change.
func ValidateIPAddressUpdate(ip, old *networkingv1.IPAddress) field.ErrorList {
	errs := ValidateIPAddress(ip)
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&ip.ObjectMeta, &old.ObjectMeta, metadataPath)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(ip.Spec.ParentRef, old.Spec.ParentRef, field.NewPath("spec", "parentRef"))...)
}

// ValidateServiceCIDR validates a networking.k8s.io/v1 ServiceCIDR, as
// upstream: one or two CIDRs, at most one per IP family.
func ValidateServiceCIDR(c *networkingv1.ServiceCIDR) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, false, DNSSubdomainName, metadataPath)
	return append(errs, validateServiceCIDRSpec(&c.Spec, field.NewPath("spec", "cidrs"))...)
}

func validateServiceCIDRSpec(spec *networkingv1.ServiceCIDRSpec, p *field.Path) field.ErrorList {
	switch {
	case len(spec.CIDRs) == 0:
		return field.ErrorList{field.Required(p, "at least one CIDR required")}
	case len(spec.CIDRs) > 2:
		return field.ErrorList{field.Invalid(p, spec, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	for i, cidr := range spec.CIDRs {
		errs = append(errs, validation.IsValidCIDR(p.Index(i), cidr)...)
	}
	if len(spec.CIDRs) == 2 {
		f0, f1 := netutils.IPFamilyOfCIDRString(spec.CIDRs[0]), netutils.IPFamilyOfCIDRString(spec.CIDRs[1])
		if f0 == f1 && f0 != netutils.IPFamilyUnknown {
			errs = append(errs, field.Invalid(p, spec.CIDRs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
		}
	}
	return errs
}

// ValidateServiceCIDRUpdate validates a ServiceCIDR update: the CIDRs are
// immutable, except that a single-stack one may gain a second family.
func ValidateServiceCIDRUpdate(c, old *networkingv1.ServiceCIDR) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, metadataPath)
	p := field.NewPath("spec", "cidrs")
	switch {
	case len(old.Spec.CIDRs) == len(c.Spec.CIDRs):
		for i, cidr := range old.Spec.CIDRs {
			if cidr != c.Spec.CIDRs[i] {
				errs = append(errs, field.Invalid(p.Index(i), c.Spec.CIDRs[i], apimachineryvalidation.FieldImmutableErrorMsg))
			}
		}
	case len(old.Spec.CIDRs) == 1 && len(c.Spec.CIDRs) == 2:
		if c.Spec.CIDRs[0] != old.Spec.CIDRs[0] {
			errs = append(errs, field.Invalid(p.Index(0), c.Spec.CIDRs[0], apimachineryvalidation.FieldImmutableErrorMsg))
		}
		errs = append(errs, validateServiceCIDRSpec(&c.Spec, p)...)
	default:
		errs = append(errs, field.Invalid(p, c.Spec.CIDRs, apimachineryvalidation.FieldImmutableErrorMsg))
	}
	return errs
}

// ValidateServiceCIDRStatusUpdate validates a ServiceCIDR status update.
func ValidateServiceCIDRStatusUpdate(c, old *networkingv1.ServiceCIDR) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, metadataPath)
}
