package validation

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateLimitRange validates a core/v1 LimitRange as upstream: each type
// once; no default or defaultRequest for Pod limits; a minimum or maximum
// storage for PersistentVolumeClaim limits; valid resource names and
// non-negative quantities; min ≤ defaultRequest ≤ default ≤ max; and
// maxLimitRequestRatio at least 1 and at least max/min.
func ValidateLimitRange(lr *v1.LimitRange) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&lr.ObjectMeta, true, DNSSubdomainName, metadataPath)
	limitsPath := field.NewPath("spec", "limits")
	seenTypes := map[v1.LimitType]bool{}
	for i, item := range lr.Spec.Limits {
		p := limitsPath.Index(i)
		if seenTypes[item.Type] {
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		seenTypes[item.Type] = true
		if item.Type == v1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		}
		if item.Type == v1.LimitTypePersistentVolumeClaim {
			_, minOK := item.Min[v1.ResourceStorage]
			_, maxOK := item.Max[v1.ResourceStorage]
			if !minOK && !maxOK {
				errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		keys := sets.New[string]()
		for _, set := range []struct {
			name string
			list v1.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}} {
			for k, q := range set.list {
				kp := p.Child(set.name).Key(string(k))
				errs = append(errs, validateQualifiedName(string(k), kp)...)
				errs = append(errs, validateResourceQuantityValue(string(k), q, kp)...)
				keys.Insert(string(k))
			}
		}
		for _, k := range sets.List(keys) {
			name := v1.ResourceName(k)
			kp := func(f string) *field.Path { return p.Child(f).Key(k) }
			minQ, hasMin := item.Min[name]
			maxQ, hasMax := item.Max[name]
			defQ, hasDef := item.Default[name]
			defReqQ, hasDefReq := item.DefaultRequest[name]
			ratio, hasRatio := item.MaxLimitRequestRatio[name]
			if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(kp("min"), minQ.String(), fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
			}
			if hasDefReq && hasMin && minQ.Cmp(defReqQ) > 0 {
				errs = append(errs, field.Invalid(kp("defaultRequest"), defReqQ.String(), fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReqQ.String())))
			}
			if hasDefReq && hasMax && defReqQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(kp("defaultRequest"), defReqQ.String(), fmt.Sprintf("default request value %s is greater than max value %s", defReqQ.String(), maxQ.String())))
			}
			if hasDefReq && hasDef && defReqQ.Cmp(defQ) > 0 {
				errs = append(errs, field.Invalid(kp("defaultRequest"), defReqQ.String(), fmt.Sprintf("default request value %s is greater than default limit value %s", defReqQ.String(), defQ.String())))
			}
			if hasDef && hasMin && minQ.Cmp(defQ) > 0 {
				errs = append(errs, field.Invalid(kp("default"), defQ.String(), fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), defQ.String())))
			}
			if hasDef && hasMax && defQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(kp("default"), defQ.String(), fmt.Sprintf("default value %s is greater than max value %s", defQ.String(), maxQ.String())))
			}
			if hasRatio {
				if ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
					errs = append(errs, field.Invalid(kp("maxLimitRequestRatio"), ratio.String(), fmt.Sprintf("ratio %s is less than 1", ratio.String())))
				}
				if hasMin && hasMax && minQ.MilliValue() > 0 {
					maxRatio := float64(maxQ.MilliValue()) / float64(minQ.MilliValue())
					if float64(ratio.MilliValue())/1000 > maxRatio {
						errs = append(errs, field.Invalid(kp("maxLimitRequestRatio"), ratio.String(), fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), maxRatio)))
					}
				}
			}
		}
	}
	return errs
}

// ValidateLimitRangeUpdate validates a LimitRange update.
func ValidateLimitRangeUpdate(newLR, oldLR *v1.LimitRange) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newLR.ObjectMeta, &oldLR.ObjectMeta, metadataPath)
	return append(errs, ValidateLimitRange(newLR)...)
}

// standardQuotaResources are the unprefixed names a quota may limit.
var standardQuotaResources = sets.New(
	"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
	"persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
	"cpu", "memory", "ephemeral-storage", "storage",
	"requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage",
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
)

// quotaScopes are the scopes a quota may select.
var quotaScopes = []string{
	string(v1.ResourceQuotaScopeTerminating), string(v1.ResourceQuotaScopeNotTerminating),
	string(v1.ResourceQuotaScopeBestEffort), string(v1.ResourceQuotaScopeNotBestEffort),
	string(v1.ResourceQuotaScopePriorityClass), string(v1.ResourceQuotaScopeCrossNamespacePodAffinity),
	string(v1.ResourceQuotaScopeVolumeAttributesClass),
}

// validateQuotaResourceName checks a quota's resource name: a qualified
// name, and when unprefixed a standard quota resource.
func validateQuotaResourceName(name string, fldPath *field.Path) field.ErrorList {
	errs := validateQualifiedName(name, fldPath)
	if len(errs) > 0 || strings.Contains(name, "/") {
		return errs
	}
	if !standardQuotaResources.Has(name) && !isHugePageResourceName(name) && !strings.HasPrefix(name, "requests.hugepages-") {
		errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource for quota"))
	}
	return errs
}

func validateQuotaList(list v1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k, q := range list {
		p := fldPath.Key(string(k))
		errs = append(errs, validateQuotaResourceName(string(k), p)...)
		errs = append(errs, validateResourceQuantityValue(string(k), q, p)...)
	}
	return errs
}

// ValidateResourceQuota validates a core/v1 ResourceQuota as upstream:
// standard or qualified resource names, non-negative quantities in
// spec.hard, status.hard and status.used, known unique scopes and scope
// selector operators.
func ValidateResourceQuota(rq *v1.ResourceQuota) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&rq.ObjectMeta, true, DNSSubdomainName, metadataPath)
	specPath := field.NewPath("spec")
	errs = append(errs, validateQuotaList(rq.Spec.Hard, specPath.Child("hard"))...)
	seen := sets.New[string]()
	for i, s := range rq.Spec.Scopes {
		p := specPath.Child("scopes").Index(i)
		if !sets.New(quotaScopes...).Has(string(s)) {
			errs = append(errs, field.NotSupported(p, s, quotaScopes))
		}
		if seen.Has(string(s)) {
			errs = append(errs, field.Duplicate(p, s))
		}
		seen.Insert(string(s))
	}
	if sel := rq.Spec.ScopeSelector; sel != nil {
		for i, req := range sel.MatchExpressions {
			p := specPath.Child("scopeSelector", "matchExpressions").Index(i)
			if !sets.New(quotaScopes...).Has(string(req.ScopeName)) {
				errs = append(errs, field.NotSupported(p.Child("scopeName"), req.ScopeName, quotaScopes))
			}
			switch req.Operator {
			case v1.ScopeSelectorOpIn, v1.ScopeSelectorOpNotIn:
				if len(req.Values) == 0 {
					errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
				}
			case v1.ScopeSelectorOpExists, v1.ScopeSelectorOpDoesNotExist:
				if len(req.Values) != 0 {
					errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
				}
			default:
				errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
			}
		}
	}
	statusPath := field.NewPath("status")
	errs = append(errs, validateQuotaList(rq.Status.Hard, statusPath.Child("hard"))...)
	return append(errs, validateQuotaList(rq.Status.Used, statusPath.Child("used"))...)
}

// ValidateResourceQuotaUpdate validates a quota update: the scopes are
// immutable.
func ValidateResourceQuotaUpdate(newRQ, oldRQ *v1.ResourceQuota) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newRQ.ObjectMeta, &oldRQ.ObjectMeta, metadataPath)
	errs = append(errs, ValidateResourceQuota(newRQ)...)
	if !sets.New(newRQ.Spec.Scopes...).Equal(sets.New(oldRQ.Spec.Scopes...)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "scopes"), newRQ.Spec.Scopes, "field is immutable"))
	}
	return errs
}

// ValidateResourceQuotaStatusUpdate validates a /status update.
func ValidateResourceQuotaStatusUpdate(newRQ, oldRQ *v1.ResourceQuota) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newRQ.ObjectMeta, &oldRQ.ObjectMeta, metadataPath)
	statusPath := field.NewPath("status")
	errs = append(errs, validateQuotaList(newRQ.Status.Hard, statusPath.Child("hard"))...)
	return append(errs, validateQuotaList(newRQ.Status.Used, statusPath.Child("used"))...)
}
