package admission

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	corelisters "k8s.io/client-go/listers/core/v1"
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
}

func (w *webhookSpec) failOpen() bool {
	return w.failurePolicy == admissionregistrationv1.Ignore
}

// ruleMatches reports whether one rule covers the request: operation,
// group, version, resource ("*" is every resource, "pods/*" every
// subresource of pods, "*/*" everything) and scope.
func ruleMatches(r *admissionregistrationv1.RuleWithOperations, a admission.Attributes) bool {
	opOK := false
	for _, op := range r.Operations {
		if op == admissionregistrationv1.OperationAll || string(op) == string(a.GetOperation()) {
			opOK = true
			break
		}
	}
	if !opOK {
		return false
	}
	gvr := a.GetResource()
	if !containsOrStar(r.APIGroups, gvr.Group) || !containsOrStar(r.APIVersions, gvr.Version) {
		return false
	}
	resOK := false
	for _, res := range r.Resources {
		name, sub, _ := strings.Cut(res, "/")
		if (name == "*" || name == gvr.Resource) && (sub == "*" || sub == a.GetSubresource()) {
			resOK = true
			break
		}
	}
	if !resOK {
		return false
	}
	if r.Scope == nil || *r.Scope == admissionregistrationv1.AllScopes {
		return true
	}
	namespaced := a.GetNamespace() != ""
	if isResource(a, namespacesResource, "-") {
		namespaced = false
	}
	return (*r.Scope == admissionregistrationv1.NamespacedScope) == namespaced
}

func containsOrStar(list []string, v string) bool {
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}

// webhookMatches applies rules, namespaceSelector and objectSelector.
// Requests about webhook configurations themselves are never sent to
// webhooks, so a broken webhook cannot lock its own fix out.
func webhookMatches(w *webhookSpec, a admission.Attributes, namespaces corelisters.NamespaceLister) (bool, error) {
	if gr := a.GetResource().GroupResource(); gr.Group == admissionregistrationv1.GroupName &&
		(gr.Resource == "mutatingwebhookconfigurations" || gr.Resource == "validatingwebhookconfigurations") {
		return false, nil
	}
	ruleOK := false
	for i := range w.rules {
		if ruleMatches(&w.rules[i], a) {
			ruleOK = true
			break
		}
	}
	if !ruleOK {
		return false, nil
	}
	if ok, err := namespaceSelectorMatches(w, a, namespaces); !ok || err != nil {
		return ok, err
	}
	return objectSelectorMatches(w, a)
}

func namespaceSelectorMatches(w *webhookSpec, a admission.Attributes, namespaces corelisters.NamespaceLister) (bool, error) {
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
		ns, err := namespaces.Get(a.GetNamespace())
		if apierrors.IsNotFound(err) {
			return false, nil
		}
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
