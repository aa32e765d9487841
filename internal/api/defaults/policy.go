package defaults

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LimitRange applies upstream's defaults to each Container limit: a
// missing default limit is the max; a missing default request is the
// default limit, else the min.
func LimitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		if item.Default == nil {
			item.Default = corev1.ResourceList{}
		}
		if item.DefaultRequest == nil {
			item.DefaultRequest = corev1.ResourceList{}
		}
		for k, v := range item.Max {
			if _, ok := item.Default[k]; !ok {
				item.Default[k] = v.DeepCopy()
			}
		}
		for k, v := range item.Default {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest[k] = v.DeepCopy()
			}
		}
		for k, v := range item.Min {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest[k] = v.DeepCopy()
			}
		}
	}
}

// webhookDefaults holds pointers to the fields both webhook kinds default.
type webhookDefaults struct {
	failurePolicy     **admissionregistrationv1.FailurePolicyType
	matchPolicy       **admissionregistrationv1.MatchPolicyType
	namespaceSelector **metav1.LabelSelector
	objectSelector    **metav1.LabelSelector
	timeoutSeconds    **int32
	clientConfig      *admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
}

func (w webhookDefaults) apply() {
	if *w.failurePolicy == nil {
		p := admissionregistrationv1.Fail
		*w.failurePolicy = &p
	}
	if *w.matchPolicy == nil {
		p := admissionregistrationv1.Equivalent
		*w.matchPolicy = &p
	}
	if *w.namespaceSelector == nil {
		*w.namespaceSelector = &metav1.LabelSelector{}
	}
	if *w.objectSelector == nil {
		*w.objectSelector = &metav1.LabelSelector{}
	}
	if *w.timeoutSeconds == nil {
		t := int32(10)
		*w.timeoutSeconds = &t
	}
	if s := w.clientConfig.Service; s != nil && s.Port == nil {
		port := int32(443)
		s.Port = &port
	}
	for i := range w.rules {
		if w.rules[i].Scope == nil {
			s := admissionregistrationv1.AllScopes
			w.rules[i].Scope = &s
		}
	}
}

// MutatingWebhookConfiguration applies upstream's v1 defaults to each
// webhook: failurePolicy Fail, matchPolicy Equivalent, empty namespace and
// object selectors, timeoutSeconds 10, reinvocationPolicy Never, service
// port 443, rule scope "*".
func MutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		webhookDefaults{&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, &w.ClientConfig, w.Rules}.apply()
		if w.ReinvocationPolicy == nil {
			p := admissionregistrationv1.NeverReinvocationPolicy
			w.ReinvocationPolicy = &p
		}
	}
}

// ValidatingWebhookConfiguration applies upstream's v1 defaults to each
// webhook, as MutatingWebhookConfiguration (without reinvocation).
func ValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		webhookDefaults{&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, &w.ClientConfig, w.Rules}.apply()
	}
}
