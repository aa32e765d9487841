package defaults

import networkingv1 "k8s.io/api/networking/v1"

// IngressClass applies the networking.k8s.io/v1 IngressClass default: a
// parameters reference without a scope is cluster-scoped.
func IngressClass(ic *networkingv1.IngressClass) {
	if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
		scope := networkingv1.IngressClassParametersReferenceScopeCluster
		p.Scope = &scope
	}
}
