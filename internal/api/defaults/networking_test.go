package defaults

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
)

func TestIngressClassDefaults(t *testing.T) {
	ic := &networkingv1.IngressClass{Spec: networkingv1.IngressClassSpec{Parameters: &networkingv1.IngressClassParametersReference{Kind: "Config", Name: "c"}}}
	IngressClass(ic)
	if s := ic.Spec.Parameters.Scope; s == nil || *s != networkingv1.IngressClassParametersReferenceScopeCluster {
		t.Fatalf("scope = %v, want Cluster", s)
	}
	ns := networkingv1.IngressClassParametersReferenceScopeNamespace
	ic.Spec.Parameters.Scope = &ns
	IngressClass(ic)
	if *ic.Spec.Parameters.Scope != ns {
		t.Fatalf("an explicit scope was changed to %s", *ic.Spec.Parameters.Scope)
	}
	none := &networkingv1.IngressClass{}
	IngressClass(none)
	if none.Spec.Parameters != nil {
		t.Fatal("parameters were invented")
	}
}
