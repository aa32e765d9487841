package validation

import (
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Name validators for ObjectMeta.Name, as upstream uses them per kind.
var (
	// DNSSubdomainName accepts DNS-1123 subdomains (pods, configmaps, secrets, nodes, …).
	DNSSubdomainName = apimachineryvalidation.NameIsDNSSubdomain
	// DNSLabelName accepts DNS-1123 labels (namespaces).
	DNSLabelName = apimachineryvalidation.NameIsDNSLabel
	// DNS1035LabelName accepts DNS-1035 labels (services).
	DNS1035LabelName = apimachineryvalidation.NameIsDNS1035Label
)

const (
	isNegativeErrorMsg    = "must be greater than or equal to 0"
	isNotPositiveErrorMsg = "must be greater than zero"
	fileModeErrorMsg      = "must be a number between 0 and 0777 (octal), both inclusive"
)

// validateNonnegative reports a negative value as Invalid with upstream's message.
func validateNonnegative(value int64, fldPath *field.Path) field.ErrorList {
	if value < 0 {
		return field.ErrorList{field.Invalid(fldPath, value, isNegativeErrorMsg)}
	}
	return nil
}

// validatePositive reports a value ≤ 0 as Invalid.
func validatePositive(value int64, fldPath *field.Path) field.ErrorList {
	if value <= 0 {
		return field.ErrorList{field.Invalid(fldPath, value, isNotPositiveErrorMsg)}
	}
	return nil
}

// validateDNS1123Label reports an invalid DNS-1123 label.
func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validateDNS1123Subdomain reports an invalid DNS-1123 subdomain.
func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validateQualifiedName reports an invalid qualified name (label keys,
// annotation keys, resource names with a prefix).
func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validateLabelValue reports an invalid label value.
func validateLabelValue(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// validatePortNumOrName checks an intstr port: a number in 1-65535 or a valid
// IANA_SVC_NAME.
func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

// validatePortNum checks a port number in 1-65535.
func validatePortNum(port int32, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(fldPath, port, msg))
	}
	return errs
}

// validateNodeName checks a node name (a DNS-1123 subdomain).
func validateNodeName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range DNSSubdomainName(name, false) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

// validateLocalDescendingPath checks that a relative path does not start
// with "/" and has no ".." element, as subPath and item paths require.
func validateLocalDescendingPath(targetPath string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(targetPath) {
		errs = append(errs, field.Invalid(fldPath, targetPath, "must be a relative path"))
	}
	errs = append(errs, validatePathNoBacksteps(targetPath, fldPath)...)
	return errs
}

// validatePathNoBacksteps rejects any ".." path element.
func validatePathNoBacksteps(targetPath string, fldPath *field.Path) field.ErrorList {
	for _, item := range strings.Split(targetPath, "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(fldPath, targetPath, "must not contain '..'")}
		}
	}
	return nil
}

// validateLocalNonReservedPath is validateLocalDescendingPath plus the rule
// that the path must not start with "..".
func validateLocalNonReservedPath(targetPath string, fldPath *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(targetPath, fldPath)
	if strings.HasPrefix(targetPath, "..") && !strings.HasPrefix(targetPath, "../") {
		errs = append(errs, field.Invalid(fldPath, targetPath, "must not start with '..'"))
	}
	return errs
}

// validateResourceQuantityValue checks a quantity is non-negative, and for
// CPU/memory-style integer resources that it is a whole number where required.
func validateResourceQuantityValue(resourceName string, value resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if value.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath, value.String(), isNegativeErrorMsg))
	}
	if isIntegerResourceName(resourceName) && value.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, value.String(), "must be an integer"))
	}
	return errs
}

// standardContainerResources are the unprefixed resource names containers
// may request.
var standardContainerResources = sets.New("cpu", "memory", "ephemeral-storage")

func isHugePageResourceName(name string) bool { return strings.HasPrefix(name, "hugepages-") }

// isIntegerResourceName reports whether quantities of a resource must be
// whole numbers: upstream requires that of extended resources.
func isIntegerResourceName(name string) bool {
	return isExtendedResourceName(name)
}

func isExtendedResourceName(name string) bool {
	if strings.HasPrefix(name, "requests.") || !strings.Contains(name, "/") {
		return false
	}
	if strings.Contains(name, "kubernetes.io/") {
		return false
	}
	return len(validation.IsQualifiedName("requests."+name)) == 0
}

// validateContainerResourceName checks a container resource name: a
// qualified name, and for native resources (unprefixed or kubernetes.io/)
// one of the standard container resources.
func validateContainerResourceName(name string, fldPath *field.Path) field.ErrorList {
	errs := validateQualifiedName(name, fldPath)
	if len(errs) != 0 {
		return errs
	}
	native := !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
	if native && !standardContainerResources.Has(name) && !isHugePageResourceName(name) {
		return append(errs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
	}
	return errs
}
