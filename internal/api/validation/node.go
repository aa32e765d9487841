package validation

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateRuntimeClass validates a node.k8s.io RuntimeClass: a DNS-1123
// label handler, overhead.podFixed as container limits, and
// scheduling's node selector labels and tolerations (unique by key,
// operator, value and effect). The paths are upstream's, quirks included:
// overhead entries are reported under overhead.limits, each toleration's
// own errors under scheduling.tolerations.tolerations[i].
func ValidateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&rc.ObjectMeta, false, DNSSubdomainName, metadataPath)
	for _, msg := range apimachineryvalidation.NameIsDNSLabel(rc.Handler, false) {
		errs = append(errs, field.Invalid(field.NewPath("handler"), rc.Handler, msg))
	}
	if rc.Overhead != nil {
		errs = append(errs, validateResourceRequirements(&v1.ResourceRequirements{Limits: rc.Overhead.PodFixed}, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		p := field.NewPath("scheduling")
		if s.NodeSelector != nil {
			errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
		}
		tp := p.Child("tolerations")
		errs = append(errs, validateTolerations(s.Tolerations, tp.Child("tolerations"))...)
		seen := map[v1.Toleration]bool{}
		for i, t := range s.Tolerations {
			key := v1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
			if seen[key] {
				errs = append(errs, field.Duplicate(tp.Index(i), t))
			}
			seen[key] = true
		}
	}
	return errs
}

// ValidateRuntimeClassUpdate validates a RuntimeClass update: the new
// object must be valid and the handler may not change.
func ValidateRuntimeClassUpdate(newRC, oldRC *nodev1.RuntimeClass) field.ErrorList {
	errs := ValidateRuntimeClass(newRC)
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&newRC.ObjectMeta, &oldRC.ObjectMeta, metadataPath)...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(newRC.Handler, oldRC.Handler, field.NewPath("handler"))...)
}

// WarningsForRuntimeClass warns about deprecated node labels in
// scheduling.nodeSelector, as upstream.
func WarningsForRuntimeClass(rc *nodev1.RuntimeClass) []string {
	if rc.Scheduling == nil {
		return nil
	}
	keys := make([]string, 0, len(rc.Scheduling.NodeSelector))
	for k := range rc.Scheduling.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var warnings []string
	for _, k := range keys {
		if d, ok := deprecatedNodeLabels[k]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: deprecated since %s; use %q instead", field.NewPath("scheduling", "nodeSelector"), d.since, d.use))
		}
	}
	return warnings
}
