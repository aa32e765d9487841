package validation

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedTaintEffects = []string{string(v1.TaintEffectNoSchedule), string(v1.TaintEffectPreferNoSchedule), string(v1.TaintEffectNoExecute)}

// validateTolerations: key a label name, empty key only with Exists,
// tolerationSeconds only with NoExecute, value a label value (Equal) or
// empty (Exists), supported operator and effect.
func validateTolerations(tolerations []v1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != v1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case v1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case v1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []string{string(v1.TolerationOpEqual), string(v1.TolerationOpExists)}))
		}
		if t.Effect != "" {
			errs = append(errs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		}
	}
	return errs
}

func validateTaintEffect(effect v1.TaintEffect, fldPath *field.Path) field.ErrorList {
	switch effect {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		return nil
	default:
		return field.ErrorList{field.NotSupported(fldPath, effect, supportedTaintEffects)}
	}
}

// validateAffinity validates node affinity, pod affinity and pod anti-affinity.
func validateAffinity(a *v1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			errs = append(errs, ValidateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution")
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			if term.Weight <= 0 || term.Weight > 100 {
				errs = append(errs, field.Invalid(pp.Index(i).Child("weight"), term.Weight, "must be in the range 1-100"))
			}
			errs = append(errs, validateNodeSelectorTerm(term.Preference, pp.Index(i).Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAffinity"))...)
	}
	if paa := a.PodAntiAffinity; paa != nil {
		errs = append(errs, validatePodAffinityTerms(paa.RequiredDuringSchedulingIgnoredDuringExecution, paa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAntiAffinity"))...)
	}
	return errs
}

// ValidateNodeSelector validates a node selector (node affinity's required
// terms): at least one term, each term's requirements valid.
func ValidateNodeSelector(ns *v1.NodeSelector, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(ns.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range ns.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(term, termsPath.Index(i))...)
	}
	return errs
}

func validateNodeSelectorTerm(term v1.NodeSelectorTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, req := range term.MatchExpressions {
		errs = append(errs, validateNodeSelectorRequirement(req, fldPath.Child("matchExpressions").Index(j))...)
	}
	for j, req := range term.MatchFields {
		p := fldPath.Child("matchFields").Index(j)
		switch req.Operator {
		case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
			if len(req.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		if req.Key != "metadata.name" {
			errs = append(errs, field.Invalid(p.Child("key"), req.Key, "not a valid field selector key"))
		}
	}
	return errs
}

func validateNodeSelectorRequirement(rq v1.NodeSelectorRequirement, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch rq.Operator {
	case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
		if len(rq.Values) == 0 {
			errs = append(errs, field.Required(fldPath.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist:
		if len(rq.Values) > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if len(rq.Values) != 1 {
			errs = append(errs, field.Required(fldPath.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.Invalid(fldPath.Child("operator"), rq.Operator, "not a valid selector operator"))
	}
	return append(errs, metav1validation.ValidateLabelName(rq.Key, fldPath.Child("key"))...)
}

func validatePodAffinityTerms(required []v1.PodAffinityTerm, preferred []v1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	rp := fldPath.Child("requiredDuringSchedulingIgnoredDuringExecution")
	for i, t := range required {
		errs = append(errs, validatePodAffinityTerm(t, rp.Index(i))...)
	}
	pp := fldPath.Child("preferredDuringSchedulingIgnoredDuringExecution")
	for i, w := range preferred {
		if w.Weight <= 0 || w.Weight > 100 {
			errs = append(errs, field.Invalid(pp.Index(i).Child("weight"), w.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, validatePodAffinityTerm(w.PodAffinityTerm, pp.Index(i).Child("podAffinityTerm"))...)
	}
	return errs
}

func validatePodAffinityTerm(t v1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(t.LabelSelector, opts, fldPath.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		for _, msg := range DNSLabelName(ns, false) {
			errs = append(errs, field.Invalid(fldPath.Child("namespace"), ns, msg))
		}
	}
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	} else {
		errs = append(errs, metav1validation.ValidateLabelName(t.TopologyKey, fldPath.Child("topologyKey"))...)
	}
	return errs
}

func validateTopologySpreadConstraints(cs []v1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range cs {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, isNotPositiveErrorMsg))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		} else {
			errs = append(errs, metav1validation.ValidateLabelName(c.TopologyKey, p.Child("topologyKey"))...)
		}
		switch c.WhenUnsatisfiable {
		case v1.DoNotSchedule, v1.ScheduleAnyway:
		default:
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []string{string(v1.DoNotSchedule), string(v1.ScheduleAnyway)}))
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains, isNotPositiveErrorMsg))
			} else if c.WhenUnsatisfiable != v1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains, fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", v1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		key := fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)
		if seen.Has(key) {
			errs = append(errs, field.Duplicate(p, key))
		}
		seen.Insert(key)
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return errs
}
