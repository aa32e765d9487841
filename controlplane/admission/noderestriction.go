package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	corelisters "k8s.io/client-go/listers/core/v1"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"berth/controlplane/authorization/node"
	"berth/internal/errdefs"
)

// NodeRestrictionName is the plugin's upstream name.
const NodeRestrictionName = "NodeRestriction"

// NodeRestrictionConfig configures NodeRestriction.
type NodeRestrictionConfig struct {
	// Pods looks up existing pods (deletions, evictions, token bindings).
	Pods corelisters.PodLister
}

// NodeRestriction limits what a node identity may write, beyond what the
// Node authorizer can see from the URL: only mirror pods bound to itself,
// only its own pods' status, deletion and eviction, only its own Node (and
// no labels in restricted namespaces, no taint changes), its own Lease and
// CSINode, and tokens only for pods on itself.
type NodeRestriction struct {
	*admission.Handler
	pods corelisters.PodLister
}

var _ admission.ValidationInterface = (*NodeRestriction)(nil)

// NewNodeRestriction validates cfg and returns the plugin.
func NewNodeRestriction(cfg NodeRestrictionConfig) (*NodeRestriction, error) {
	if cfg.Pods == nil {
		return nil, fmt.Errorf("%s: Config.Pods must be set: %w", NodeRestrictionName, errdefs.ErrInvalidArgument)
	}
	return &NodeRestriction{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete), pods: cfg.Pods}, nil
}

// Validate applies the restrictions to requests by node identities.
func (p *NodeRestriction) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	nodeName, isNode := node.NodeIdentity(a.GetUserInfo())
	if !isNode {
		return nil
	}
	if nodeName == "" {
		return admission.NewForbidden(a, fmt.Errorf("could not determine node from user %q", a.GetUserInfo().GetName()))
	}
	gr := a.GetResource().GroupResource()
	switch {
	case gr == podsResource.GroupResource():
		switch a.GetSubresource() {
		case "":
			return p.admitPod(nodeName, a)
		case "status":
			return p.admitPodStatus(nodeName, a)
		case "eviction":
			return p.admitPodEviction(nodeName, a)
		default:
			return admission.NewForbidden(a, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.GetSubresource()))
		}
	case gr == nodesResource.GroupResource():
		return p.admitNode(nodeName, a)
	case gr.Group == "" && gr.Resource == "serviceaccounts" && a.GetSubresource() == "token":
		return p.admitToken(nodeName, a)
	case gr.Group == "coordination.k8s.io" && gr.Resource == "leases":
		if a.GetOperation() == admission.Create || a.GetOperation() == admission.Update {
			if a.GetNamespace() != corev1.NamespaceNodeLease || leaseName(a) != nodeName {
				return admission.NewForbidden(a, fmt.Errorf("can only access node lease with the same name as the requesting node"))
			}
		}
	case gr.Group == "storage.k8s.io" && gr.Resource == "csinodes":
		if a.GetOperation() == admission.Create || a.GetOperation() == admission.Update {
			name := a.GetName()
			if c, ok := a.GetObject().(*storagev1.CSINode); ok && name == "" {
				name = c.Name
			}
			if name != nodeName {
				return admission.NewForbidden(a, fmt.Errorf("can only access CSINode with the same name as the requesting node"))
			}
		}
	}
	return nil
}

func leaseName(a admission.Attributes) string {
	if a.GetName() != "" {
		return a.GetName()
	}
	if o, ok := a.GetObject().(interface{ GetName() string }); ok {
		return o.GetName()
	}
	return ""
}

func (p *NodeRestriction) admitPod(nodeName string, a admission.Attributes) error {
	switch a.GetOperation() {
	case admission.Create:
		pod, ok := a.GetObject().(*corev1.Pod)
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod, got %T", a.GetObject()))
		}
		if _, mirror := pod.Annotations[MirrorPodAnnotation]; !mirror {
			return admission.NewForbidden(a, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", MirrorPodAnnotation, nodeName))
		}
		if pod.Spec.NodeName != nodeName {
			return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", nodeName))
		}
		for _, ref := range pod.OwnerReferences {
			if ref.APIVersion != "v1" || ref.Kind != "Node" || ref.Name != nodeName {
				return admission.NewForbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
			}
		}
		if pod.Spec.ServiceAccountName != "" {
			return admission.NewForbidden(a, fmt.Errorf("node %q can not create pods that reference a service account", nodeName))
		}
		for _, v := range pod.Spec.Volumes {
			switch {
			case v.Secret != nil:
				return admission.NewForbidden(a, fmt.Errorf("node %q can not create pods that reference secrets", nodeName))
			case v.ConfigMap != nil:
				return admission.NewForbidden(a, fmt.Errorf("node %q can not create pods that reference configmaps", nodeName))
			case v.PersistentVolumeClaim != nil:
				return admission.NewForbidden(a, fmt.Errorf("node %q can not create pods that reference persistentvolumeclaims", nodeName))
			case v.Projected != nil:
				return admission.NewForbidden(a, fmt.Errorf("node %q can not create pods that use projected volumes", nodeName))
			}
		}
		return nil
	case admission.Delete:
		existing, err := p.pods.Pods(a.GetNamespace()).Get(a.GetName())
		if err != nil {
			return err
		}
		if existing.Spec.NodeName != nodeName {
			return admission.NewForbidden(a, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nodeName))
		}
		return nil
	default:
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.GetOperation(), nodeName))
	}
}

func (p *NodeRestriction) admitPodStatus(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Update {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	old, ok := a.GetOldObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected old *v1.Pod, got %T", a.GetOldObject()))
	}
	if old.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", nodeName))
	}
	return nil
}

func (p *NodeRestriction) admitPodEviction(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %q", a.GetOperation()))
	}
	existing, err := p.pods.Pods(a.GetNamespace()).Get(a.GetName())
	if err != nil {
		return err
	}
	if existing.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", nodeName))
	}
	return nil
}

func (p *NodeRestriction) admitNode(nodeName string, a admission.Attributes) error {
	requested := a.GetName()
	obj, _ := a.GetObject().(*corev1.Node)
	if requested == "" && obj != nil {
		requested = obj.Name
	}
	if requested != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify node %q", nodeName, requested))
	}
	if a.GetSubresource() != "" || obj == nil {
		return nil
	}
	switch a.GetOperation() {
	case admission.Create:
		if bad := forbiddenNodeLabels(labelKeys(obj.Labels)); len(bad) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to set the following labels: %s", nodeName, strings.Join(bad, ", ")))
		}
	case admission.Update:
		old, ok := a.GetOldObject().(*corev1.Node)
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("expected old *v1.Node, got %T", a.GetOldObject()))
		}
		if !apiequality.Semantic.DeepEqual(obj.Spec.Taints, old.Spec.Taints) {
			return admission.NewForbidden(a, fmt.Errorf("node %q is not allowed to modify taints", nodeName))
		}
		if bad := forbiddenNodeLabels(modifiedLabels(obj.Labels, old.Labels)); len(bad) > 0 {
			return admission.NewForbidden(a, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", ")))
		}
	}
	return nil
}

func (p *NodeRestriction) admitToken(nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return nil
	}
	tr, ok := a.GetObject().(*authenticationv1.TokenRequest)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *authenticationv1.TokenRequest, got %T", a.GetObject()))
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" {
		return admission.NewForbidden(a, fmt.Errorf("node requested token not bound to a pod"))
	}
	if ref.UID == "" {
		return admission.NewForbidden(a, fmt.Errorf("node requested token with a pod binding without a uid"))
	}
	pod, err := p.pods.Pods(a.GetNamespace()).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if ref.UID != pod.UID {
		return admission.NewForbidden(a, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("node requested token bound to a pod scheduled on a different node"))
	}
	return nil
}

func labelKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// modifiedLabels lists keys added, removed or changed between old and new.
func modifiedLabels(new, old map[string]string) []string {
	var out []string
	for k, v := range new {
		if ov, ok := old[k]; !ok || ov != v {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := new[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// forbiddenNodeLabels returns, sorted, the keys a node may not set: any in
// the node-restriction.kubernetes.io namespace, and any other kubernetes.io
// or k8s.io key the kubelet does not own.
func forbiddenNodeLabels(keys []string) []string {
	var out []string
	for _, k := range keys {
		ns := labelNamespace(k)
		switch {
		case ns == corev1.LabelNamespaceNodeRestriction || strings.HasSuffix(ns, "."+corev1.LabelNamespaceNodeRestriction):
			out = append(out, k)
		case isKubernetesLabelNamespace(ns) && !kubeletapis.IsKubeletLabel(k):
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func labelNamespace(key string) string {
	if i := strings.Index(key, "/"); i >= 0 {
		return key[:i]
	}
	return ""
}

func isKubernetesLabelNamespace(ns string) bool {
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}
