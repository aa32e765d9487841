package validation

import (
	"fmt"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/util/shufflesharding"

	"berth/internal/api/defaults"
)

const (
	maxQueues        = 10 * 1000 * 1000
	namespaceErrHead = "each member of this list must be '*' or a DNS-1123 label; "
)

var (
	supportedDistinguishers = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	supportedFlowVerbs      = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
	supportedSubjectKinds   = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
	supportedEnablements    = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	supportedLimitResponses = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

// ValidateFlowSchema validates a FlowSchema as upstream; the mandatory
// schemas (exempt, catch-all) must keep their fixed spec.
func ValidateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&fs.ObjectMeta, false, DNSSubdomainName, metadataPath)
	sp := field.NewPath("spec")
	errs = append(errs, validateFlowSchemaSpec(fs.Name, &fs.Spec, sp)...)
	for _, m := range bootstrap.MandatoryFlowSchemas {
		if m.Name != fs.Name {
			continue
		}
		want := m.DeepCopy()
		defaults.FlowSchema(want)
		if !apiequality.Semantic.DeepEqual(fs.Spec, want.Spec) {
			errs = append(errs, field.Invalid(sp, fs.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
		}
	}
	return append(errs, ValidateFlowSchemaStatusUpdate(fs, nil)...)
}

// ValidateFlowSchemaUpdate validates an update of a FlowSchema.
func ValidateFlowSchemaUpdate(fs, old *flowcontrolv1.FlowSchema) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&fs.ObjectMeta, &old.ObjectMeta, metadataPath)
	return append(errs, ValidateFlowSchema(fs)...)
}

// ValidateFlowSchemaStatusUpdate validates a FlowSchema's conditions.
func ValidateFlowSchemaStatusUpdate(fs, _ *flowcontrolv1.FlowSchema) field.ErrorList {
	types := make([]string, len(fs.Status.Conditions))
	for i, c := range fs.Status.Conditions {
		types[i] = string(c.Type)
	}
	return validateConditionTypes(types, field.NewPath("status", "conditions"))
}

func validateConditionTypes(types []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, t := range types {
		if seen.Has(t) {
			errs = append(errs, field.Duplicate(p.Index(i).Child("type"), t))
		}
		seen.Insert(t)
		if t == "" {
			errs = append(errs, field.Required(p.Index(i).Child("type"), ""))
		}
	}
	return errs
}

func validateFlowSchemaSpec(name string, spec *flowcontrolv1.FlowSchemaSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mp := p.Child("matchingPrecedence")
	if spec.MatchingPrecedence <= 0 {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "must be a positive value"))
	}
	if spec.MatchingPrecedence > 10000 {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "must not be greater than 10000"))
	}
	if spec.MatchingPrecedence == 1 && name != flowcontrolv1.FlowSchemaNameExempt {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if d := spec.DistinguisherMethod; d != nil && !sets.New(supportedDistinguishers...).Has(string(d.Type)) {
		errs = append(errs, field.NotSupported(p.Child("distinguisherMethod", "type"), d, supportedDistinguishers))
	}
	pp := p.Child("priorityLevelConfiguration", "name")
	if pl := spec.PriorityLevelConfiguration.Name; pl == "" {
		errs = append(errs, field.Required(pp, "must reference a priority level"))
	} else {
		for _, msg := range DNSSubdomainName(pl, false) {
			errs = append(errs, field.Invalid(pp, pl, msg))
		}
	}
	for i, r := range spec.Rules {
		errs = append(errs, validatePolicyRulesWithSubjects(r, p.Child("rules").Index(i))...)
	}
	return errs
}

func validatePolicyRulesWithSubjects(r flowcontrolv1.PolicyRulesWithSubjects, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Subjects) == 0 {
		errs = append(errs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i, s := range r.Subjects {
		errs = append(errs, validateFlowSubject(s, p.Child("subjects").Index(i))...)
	}
	if len(r.ResourceRules) == 0 && len(r.NonResourceRules) == 0 {
		errs = append(errs, field.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i, rr := range r.ResourceRules {
		errs = append(errs, validateResourcePolicyRule(rr, p.Child("resourceRules").Index(i))...)
	}
	for i, nr := range r.NonResourceRules {
		errs = append(errs, validateNonResourcePolicyRule(nr, p.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

func validateFlowSubject(s flowcontrolv1.Subject, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(set bool, child, msg string) {
		if set {
			errs = append(errs, field.Forbidden(p.Child(child), msg))
		}
	}
	notUser := "user is forbidden when subject kind is not 'User'"
	notGroup := "group is forbidden when subject kind is not 'Group'"
	notSA := "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		sp := p.Child("serviceAccount")
		if sa := s.ServiceAccount; sa == nil {
			errs = append(errs, field.Required(sp, "serviceAccount is required when subject kind is 'ServiceAccount'"))
		} else {
			if sa.Name == "" {
				errs = append(errs, field.Required(sp.Child("name"), ""))
			} else if sa.Name != flowcontrolv1.NameAll {
				for _, msg := range apimachineryvalidation.ValidateServiceAccountName(sa.Name, false) {
					errs = append(errs, field.Invalid(sp.Child("name"), sa.Name, msg))
				}
			}
			if sa.Namespace == "" {
				errs = append(errs, field.Required(sp.Child("namespace"), "must specify namespace for service account"))
			} else {
				for _, msg := range apimachineryvalidation.ValidateNamespaceName(sa.Namespace, false) {
					errs = append(errs, field.Invalid(sp.Child("namespace"), sa.Namespace, msg))
				}
			}
		}
		forbid(s.User != nil, "user", notUser)
		forbid(s.Group != nil, "group", notGroup)
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(p.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(p.Child("user", "name"), ""))
		}
		forbid(s.ServiceAccount != nil, "serviceAccount", notSA)
		forbid(s.Group != nil, "group", notGroup)
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(p.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(p.Child("group", "name"), ""))
		}
		forbid(s.ServiceAccount != nil, "serviceAccount", notSA)
		forbid(s.User != nil, "user", notUser)
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, supportedSubjectKinds))
	}
	return errs
}

func validateFlowVerbs(verbs []string, p *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(p, "verbs must contain at least one value")}
	case hasWildcard(verbs):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(p, verbs, "if '*' is present, must not specify other verbs")}
		}
	case !sets.New(supportedFlowVerbs...).IsSuperset(sets.New(verbs...)):
		return field.ErrorList{field.NotSupported(p, verbs, supportedFlowVerbs)}
	}
	return nil
}

func validateResourcePolicyRule(r flowcontrolv1.ResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateFlowVerbs(r.Verbs, p.Child("verbs"))
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(r.Resources) > 1 && hasWildcard(r.Resources) {
		errs = append(errs, field.Invalid(p.Child("resources"), r.Resources, "if '*' is present, must not specify other resources"))
	}
	np := p.Child("namespaces")
	switch {
	case len(r.Namespaces) == 0 && !r.ClusterScope:
		errs = append(errs, field.Required(np, "resource rules that are not cluster scoped must supply at least one namespace"))
	case hasWildcard(r.Namespaces):
		if len(r.Namespaces) > 1 {
			errs = append(errs, field.Invalid(np, r.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range r.Namespaces {
			for _, msg := range apimachineryvalidation.ValidateNamespaceName(ns, false) {
				errs = append(errs, field.Invalid(np.Index(i), ns, namespaceErrHead+msg))
			}
		}
	}
	return errs
}

func validateNonResourcePolicyRule(r flowcontrolv1.NonResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateFlowVerbs(r.Verbs, p.Child("verbs"))
	up := p.Child("nonResourceURLs")
	switch {
	case len(r.NonResourceURLs) == 0:
		errs = append(errs, field.Required(up, "nonResourceURLs must contain at least one value"))
	case hasWildcard(r.NonResourceURLs):
		if len(r.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(up, r.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range r.NonResourceURLs {
			if msg := nonResourceURLProblem(u); msg != "" {
				errs = append(errs, field.Invalid(up.Index(i), u, msg))
			}
		}
	}
	return errs
}

func nonResourceURLProblem(u string) string {
	switch {
	case u == "":
		return "must not be empty"
	case u == "/":
		return ""
	case !strings.HasPrefix(u, "/"):
		return "must start with slash"
	case strings.Contains(u, " "):
		return "must not contain white-space"
	case strings.Contains(u, "//"):
		return "must not contain double slash"
	}
	if n := strings.Count(u, "*"); n > 1 || (n == 1 && !strings.HasSuffix(u, "/*")) {
		return "wildcard can only do suffix matching"
	}
	return ""
}

// ValidatePriorityLevelConfiguration validates a PriorityLevelConfiguration
// as upstream; the mandatory levels keep their fixed spec (exempt may
// change only spec.exempt).
func ValidatePriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&pl.ObjectMeta, false, DNSSubdomainName, metadataPath)
	if _, ok := pl.Annotations["flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"]; ok {
		errs = append(errs, field.Forbidden(metadataPath.Child("annotations"),
			"annotation 'flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares' is forbidden"))
	}
	sp := field.NewPath("spec")
	errs = append(errs, validatePriorityLevelSpec(pl.Name, &pl.Spec, sp)...)
	for _, m := range bootstrap.MandatoryPriorityLevelConfigurations {
		if m.Name != pl.Name {
			continue
		}
		want := m.DeepCopy()
		defaults.PriorityLevelConfiguration(want)
		have := pl.Spec.DeepCopy()
		msg := fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name)
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			have.Exempt = want.Spec.Exempt
			msg = fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name)
		}
		if !apiequality.Semantic.DeepEqual(*have, want.Spec) {
			errs = append(errs, field.Invalid(sp, pl.Spec, msg))
		}
	}
	return append(errs, ValidatePriorityLevelConfigurationStatusUpdate(pl, nil)...)
}

// ValidatePriorityLevelConfigurationUpdate validates an update.
func ValidatePriorityLevelConfigurationUpdate(pl, old *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&pl.ObjectMeta, &old.ObjectMeta, metadataPath)
	return append(errs, ValidatePriorityLevelConfiguration(pl)...)
}

// ValidatePriorityLevelConfigurationStatusUpdate validates the conditions.
func ValidatePriorityLevelConfigurationStatusUpdate(pl, _ *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	types := make([]string, len(pl.Status.Conditions))
	for i, c := range pl.Status.Conditions {
		types[i] = string(c.Type)
	}
	return validateConditionTypes(types, field.NewPath("status", "conditions"))
}

func validatePriorityLevelSpec(name string, spec *flowcontrolv1.PriorityLevelConfigurationSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(p.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	percent := func(v *int32, fp *field.Path) {
		if v != nil && (*v < 0 || *v > 100) {
			errs = append(errs, field.Invalid(fp, *v, "must be between 0 and 100, inclusive"))
		}
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(p.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := spec.Exempt; e != nil {
			if e.NominalConcurrencyShares != nil && *e.NominalConcurrencyShares < 0 {
				errs = append(errs, field.Invalid(p.Child("exempt", "nominalConcurrencyShares"), *e.NominalConcurrencyShares, "must be a non-negative integer"))
			}
			percent(e.LendablePercent, p.Child("exempt", "lendablePercent"))
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(p.Child("exempt"), "must be nil if the type is Limited"))
		}
		l := spec.Limited
		if l == nil {
			errs = append(errs, field.Required(p.Child("limited"), "must not be empty when type is Limited"))
			break
		}
		lp := p.Child("limited")
		if l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares < 0 {
			errs = append(errs, field.Invalid(lp.Child("nominalConcurrencyShares"), *l.NominalConcurrencyShares, "must be a non-negative integer"))
		}
		errs = append(errs, validateLimitResponse(l.LimitResponse, lp.Child("limitResponse"))...)
		percent(l.LendablePercent, lp.Child("lendablePercent"))
		if l.BorrowingLimitPercent != nil && *l.BorrowingLimitPercent < 0 {
			errs = append(errs, field.Invalid(lp.Child("borrowingLimitPercent"), *l.BorrowingLimitPercent, "if specified, must be a non-negative integer"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, supportedEnablements))
	}
	return errs
}

func validateLimitResponse(r flowcontrolv1.LimitResponse, p *field.Path) field.ErrorList {
	switch r.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if r.Queuing != nil {
			return field.ErrorList{field.Forbidden(p.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited")}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		q := r.Queuing
		qp := p.Child("queuing")
		if q == nil {
			return field.ErrorList{field.Required(qp, "must not be empty if limited.limitResponse.type is Limited")}
		}
		var errs field.ErrorList
		if q.QueueLengthLimit <= 0 {
			errs = append(errs, field.Invalid(qp.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
		}
		if q.Queues <= 0 {
			errs = append(errs, field.Invalid(qp.Child("queues"), q.Queues, "must be positive"))
		} else if q.Queues > maxQueues {
			errs = append(errs, field.Invalid(qp.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
		}
		switch {
		case q.HandSize <= 0:
			errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize, "must be positive"))
		case q.HandSize > q.Queues:
			errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
		case shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)) > shufflesharding.MaxHashBits:
			errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize, fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d",
				q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
		}
		return errs
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), r.Type, supportedLimitResponses)}
	}
	return nil
}
