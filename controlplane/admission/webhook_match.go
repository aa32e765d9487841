package admission

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
)

// webhookSpec is what matching and calling need from a Mutating or
// Validating webhook.
type webhookSpec struct {
	config             string // owning configuration's name
	name               string
	clientConfig       admissionregistrationv1.WebhookClientConfig
	rules              []admissionregistrationv1.RuleWithOperations
	failurePolicy      admissionregistrationv1.FailurePolicyType
	namespaceSelector  *metav1.LabelSelector
	objectSelector     *metav1.LabelSelector
	sideEffects        *admissionregistrationv1.SideEffectClass
	timeoutSeconds     *int32
	reviewVersions     []string
	reinvocationPolicy admissionregistrationv1.ReinvocationPolicyType
	matchConditions    []admissionregistrationv1.MatchCondition
}

func (w *webhookSpec) failOpen() bool {
	return w.failurePolicy == admissionregistrationv1.Ignore
}

// webhookMatches applies rules (upstream's matcher), namespaceSelector and
// objectSelector. Requests about webhook configurations and admission
// policies are never sent to webhooks, so a broken webhook cannot lock its
// own fix out.
func webhookMatches(ctx context.Context, w *webhookSpec, a admission.Attributes, namespace webhookNamespaceFunc) (bool, error) {
	if rules.IsExemptAdmissionConfigurationResource(a) {
		return false, nil
	}
	ruleOK := false
	for _, r := range w.rules {
		// Operation, group, version, resource ("*" every resource, "pods/*"
		// every subresource of pods, "*/*" everything) and scope.
		m := rules.Matcher{Rule: r, Attr: a}
		if m.Matches() {
			ruleOK = true
			break
		}
	}
	if !ruleOK {
		return false, nil
	}
	if ok, err := namespaceSelectorMatches(ctx, w, a, namespace); !ok || err != nil {
		return ok, err
	}
	return objectSelectorMatches(w, a)
}

// webhookNamespaceFunc finds a namespace by name.
type webhookNamespaceFunc func(ctx context.Context, name string) (*corev1.Namespace, error)

// namespaceSelectorMatches applies namespaceSelector. As upstream, a
// request in a namespace that does not exist is refused with 404.
func namespaceSelectorMatches(ctx context.Context, w *webhookSpec, a admission.Attributes, namespace webhookNamespaceFunc) (bool, error) {
	sel, err := selectorOf(w.namespaceSelector)
	if err != nil {
		return false, fmt.Errorf("webhook %q: namespaceSelector: %w", w.name, err)
	}
	if sel.Empty() {
		return true, nil
	}
	var nsLabels map[string]string
	switch {
	case isResource(a, namespacesResource, "-"):
		// A namespace is matched by its own labels.
		if m, err := meta.Accessor(a.GetObject()); err == nil && a.GetObject() != nil {
			nsLabels = m.GetLabels()
		} else if m, err := meta.Accessor(a.GetOldObject()); err == nil && a.GetOldObject() != nil {
			nsLabels = m.GetLabels()
		}
	case a.GetNamespace() == "":
		// Cluster-scoped objects are not subject to namespace selectors.
		return true, nil
	default:
		ns, err := namespace(ctx, a.GetNamespace())
		if err != nil {
			return false, err
		}
		nsLabels = ns.Labels
	}
	return sel.Matches(labels.Set(nsLabels)), nil
}

func objectSelectorMatches(w *webhookSpec, a admission.Attributes) (bool, error) {
	sel, err := selectorOf(w.objectSelector)
	if err != nil {
		return false, fmt.Errorf("webhook %q: objectSelector: %w", w.name, err)
	}
	if sel.Empty() {
		return true, nil
	}
	for _, obj := range []any{a.GetObject(), a.GetOldObject()} {
		if obj == nil {
			continue
		}
		if m, err := meta.Accessor(obj); err == nil && sel.Matches(labels.Set(m.GetLabels())) {
			return true, nil
		}
	}
	return false, nil
}

func selectorOf(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}
