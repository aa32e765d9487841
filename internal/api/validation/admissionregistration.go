package validation

import (
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// webhookCommon is what mutating and validating webhooks share.
type webhookCommon struct {
	name                    string
	clientConfig            admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	matchPolicy             *admissionregistrationv1.MatchPolicyType
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
}

// ValidateMutatingWebhookConfiguration validates a mutating webhook
// configuration as upstream (admissionregistration.k8s.io/v1 rules).
func ValidateMutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, false, DNSSubdomainName, metadataPath)
	names := sets.New[string]()
	for i, w := range c.Webhooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(webhookCommon{w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy,
			w.NamespaceSelector, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions}, names, p)...)
		if r := w.ReinvocationPolicy; r != nil && *r != admissionregistrationv1.NeverReinvocationPolicy && *r != admissionregistrationv1.IfNeededReinvocationPolicy {
			errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *r, []string{string(admissionregistrationv1.NeverReinvocationPolicy), string(admissionregistrationv1.IfNeededReinvocationPolicy)}))
		}
	}
	return errs
}

// ValidateMutatingWebhookConfigurationUpdate validates an update.
func ValidateMutatingWebhookConfigurationUpdate(newC, oldC *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newC.ObjectMeta, &oldC.ObjectMeta, metadataPath)
	return append(errs, ValidateMutatingWebhookConfiguration(newC)...)
}

// ValidateValidatingWebhookConfiguration validates a validating webhook
// configuration as upstream.
func ValidateValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, false, DNSSubdomainName, metadataPath)
	names := sets.New[string]()
	for i, w := range c.Webhooks {
		errs = append(errs, validateWebhook(webhookCommon{w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy,
			w.NamespaceSelector, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions}, names, field.NewPath("webhooks").Index(i))...)
	}
	return errs
}

// ValidateValidatingWebhookConfigurationUpdate validates an update.
func ValidateValidatingWebhookConfigurationUpdate(newC, oldC *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newC.ObjectMeta, &oldC.ObjectMeta, metadataPath)
	return append(errs, ValidateValidatingWebhookConfiguration(newC)...)
}

func validateWebhook(w webhookCommon, names sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	np := p.Child("name")
	if w.name == "" {
		errs = append(errs, field.Required(np, ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(w.name) {
			errs = append(errs, field.Invalid(np, w.name, msg))
		}
		if len(strings.Split(w.name, ".")) < 3 {
			errs = append(errs, field.Invalid(np, w.name, "should be a domain with at least three segments separated by dots"))
		}
		if names.Has(w.name) {
			errs = append(errs, field.Duplicate(np, w.name))
		}
		names.Insert(w.name)
	}
	for j, r := range w.rules {
		errs = append(errs, validateRuleWithOperations(r, p.Child("rules").Index(j))...)
	}
	if fp := w.failurePolicy; fp != nil && *fp != admissionregistrationv1.Fail && *fp != admissionregistrationv1.Ignore {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *fp, []string{string(admissionregistrationv1.Fail), string(admissionregistrationv1.Ignore)}))
	}
	if mp := w.matchPolicy; mp != nil && *mp != admissionregistrationv1.Exact && *mp != admissionregistrationv1.Equivalent {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *mp, []string{string(admissionregistrationv1.Equivalent), string(admissionregistrationv1.Exact)}))
	}
	if w.sideEffects == nil {
		errs = append(errs, field.Required(p.Child("sideEffects"), fmt.Sprintf("must specify one of %v", []string{"None", "NoneOnDryRun"})))
	} else if se := *w.sideEffects; se != admissionregistrationv1.SideEffectClassNone && se != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), se, []string{"None", "NoneOnDryRun"}))
	}
	if t := w.timeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	errs = append(errs, validateAdmissionReviewVersions(w.admissionReviewVersions, p.Child("admissionReviewVersions"))...)
	errs = append(errs, validateWebhookClientConfig(w.clientConfig, p.Child("clientConfig"))...)
	opts := metav1validation.LabelSelectorValidationOptions{}
	if w.namespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(w.namespaceSelector, opts, p.Child("namespaceSelector"))...)
	}
	if w.objectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(w.objectSelector, opts, p.Child("objectSelector"))...)
	}
	return errs
}

var supportedOperations = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}

func validateRuleWithOperations(r admissionregistrationv1.RuleWithOperations, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(p.Child("operations"), ""))
	}
	if len(r.Operations) > 1 && hasWildcardOp(r.Operations) {
		errs = append(errs, field.Invalid(p.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !sets.New(supportedOperations...).Has(string(op)) {
			errs = append(errs, field.NotSupported(p.Child("operations").Index(i), op, supportedOperations))
		}
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && hasWildcard(r.APIGroups) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && hasWildcard(r.APIVersions) {
		errs = append(errs, field.Invalid(p.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(p.Child("apiVersions").Index(i), ""))
		}
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), ""))
	}
	for i, res := range r.Resources {
		if res == "" {
			errs = append(errs, field.Required(p.Child("resources").Index(i), ""))
		}
	}
	if s := r.Scope; s != nil && *s != admissionregistrationv1.ClusterScope && *s != admissionregistrationv1.NamespacedScope && *s != admissionregistrationv1.AllScopes {
		errs = append(errs, field.NotSupported(p.Child("scope"), *s, []string{"Cluster", "Namespaced", "*"}))
	}
	return errs
}

func hasWildcardOp(ops []admissionregistrationv1.OperationType) bool {
	for _, o := range ops {
		if o == admissionregistrationv1.OperationAll {
			return true
		}
	}
	return false
}

func hasWildcard(s []string) bool {
	for _, v := range s {
		if v == "*" {
			return true
		}
	}
	return false
}

func validateAdmissionReviewVersions(versions []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of v1, v1beta1")}
	}
	seen, known := sets.New[string](), false
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
		}
		seen.Insert(v)
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		if v == "v1" || v == "v1beta1" {
			known = true
		}
	}
	if !known {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of v1, v1beta1"))
	}
	return errs
}

func validateWebhookClientConfig(cc admissionregistrationv1.WebhookClientConfig, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(p, "exactly one of url or service is required"))
	case cc.URL != nil:
		up := p.Child("url")
		u, err := url.Parse(*cc.URL)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(up, *cc.URL, "host must be specified"))
		case u.Scheme != "https":
			errs = append(errs, field.Invalid(up, u.Scheme, "'https' is the only allowed URL scheme"))
		case u.Host == "":
			errs = append(errs, field.Invalid(up, u.Host, "host must be specified"))
		case u.User != nil:
			errs = append(errs, field.Invalid(up, u.User.String(), "user information is not permitted in the URL"))
		case u.Fragment != "":
			errs = append(errs, field.Invalid(up, u.Fragment, "fragments are not permitted in the URL"))
		case u.RawQuery != "":
			errs = append(errs, field.Invalid(up, u.RawQuery, "query parameters are not permitted in the URL"))
		}
	default:
		sp := p.Child("service")
		s := cc.Service
		if s.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), "service name is required"))
		}
		if s.Namespace == "" {
			errs = append(errs, field.Required(sp.Child("namespace"), "service namespace is required"))
		}
		// As upstream: an empty path is the root.
		if s.Path != nil && *s.Path != "" && !strings.HasPrefix(*s.Path, "/") {
			errs = append(errs, field.Invalid(sp.Child("path"), *s.Path, "must start with a '/'"))
		}
		if s.Port != nil && (*s.Port < 1 || *s.Port > 65535) {
			errs = append(errs, field.Invalid(sp.Child("port"), *s.Port, "port is not valid: must be between 1 and 65535, inclusive"))
		}
	}
	return errs
}
