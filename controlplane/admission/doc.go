// Package admission holds berth's admission plugins, each implementing
// k8s.io/apiserver's admission.MutationInterface and/or
// admission.ValidationInterface, and Chain, which orders them as upstream
// does: every mutating plugin in order, then every validating plugin in order.
package admission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

var (
	podsResource       = corev1.SchemeGroupVersion.WithResource("pods")
	namespacesResource = corev1.SchemeGroupVersion.WithResource("namespaces")
	nodesResource      = corev1.SchemeGroupVersion.WithResource("nodes")
	claimsResource     = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	namespaceKind      = schema.GroupKind{Kind: "Namespace"}
)

// isResource reports whether the request is for the group/resource gvr
// (any version) and, when sub is not "-", the given subresource.
func isResource(a admission.Attributes, gvr schema.GroupVersionResource, sub string) bool {
	if a.GetResource().GroupResource() != gvr.GroupResource() {
		return false
	}
	return sub == "-" || a.GetSubresource() == sub
}
