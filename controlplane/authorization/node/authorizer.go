// Package node is berth's Node authorizer: a node identity
// (user "system:node:NAME" in group "system:nodes") may read only the pods
// bound to it and the secrets, configmaps, PVCs, PVs and service accounts
// those pods reference, and write only its own Node, its Lease and its pods'
// status. Everything it does not grant gets no opinion, so a later
// authorizer (RBAC) may still allow it.
package node

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"berth/controlplane/authorization/rbac"
	"berth/controlplane/authorization/rbac/bootstrap"
	"berth/internal/errdefs"
)

const (
	// NodesGroup is the group every node identity belongs to.
	NodesGroup = "system:nodes"
	// NodeUserPrefix prefixes a node identity's user name.
	NodeUserPrefix = "system:node:"
	// NodeLeaseNamespace holds the nodes' heartbeat Leases.
	NodeLeaseNamespace = corev1.NamespaceNodeLease
)

// Config holds the informers the authorizer builds its graph from.
type Config struct {
	Pods              coreinformers.PodInformer
	PersistentVolumes coreinformers.PersistentVolumeInformer
}

// Authorizer is the Node authorizer. It implements authorizer.Authorizer and
// authorizer.RuleResolver.
type Authorizer struct {
	graph     *Graph
	nodeRules []rbacv1.PolicyRule
	synced    []cache.InformerSynced
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// New returns a Node authorizer and registers its graph's event handlers on
// cfg's informers; the caller starts the informers.
func New(cfg Config) (*Authorizer, error) {
	if cfg.Pods == nil || cfg.PersistentVolumes == nil {
		return nil, fmt.Errorf("node authorizer: Config.Pods and Config.PersistentVolumes must be set: %w", errdefs.ErrInvalidArgument)
	}
	a := &Authorizer{graph: NewGraph(), nodeRules: bootstrap.NodeRules()}
	podReg, err := cfg.Pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.setPod(obj) },
		UpdateFunc: func(_, obj any) { a.setPod(obj) },
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				ns, name, _ := cache.SplitMetaNamespaceKey(key)
				a.graph.DeletePod(ns, name)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("node authorizer: pod handler: %w", err)
	}
	pvReg, err := cfg.PersistentVolumes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.setPV(obj) },
		UpdateFunc: func(_, obj any) { a.setPV(obj) },
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				a.graph.DeletePV(key)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("node authorizer: pv handler: %w", err)
	}
	a.synced = []cache.InformerSynced{podReg.HasSynced, pvReg.HasSynced}
	return a, nil
}

// HasSynced reports whether the graph has seen the informers' initial lists;
// until then the authorizer may refuse what it would later allow.
func (a *Authorizer) HasSynced() bool {
	for _, s := range a.synced {
		if !s() {
			return false
		}
	}
	return true
}

func (a *Authorizer) setPod(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok {
		a.graph.SetPod(pod)
	}
}

func (a *Authorizer) setPV(obj any) {
	if pv, ok := obj.(*corev1.PersistentVolume); ok {
		a.graph.SetPV(pv)
	}
}

// NodeIdentity returns the node name of a node identity, and whether u is one.
func NodeIdentity(u user.Info) (string, bool) {
	if u == nil || !strings.HasPrefix(u.GetName(), NodeUserPrefix) {
		return "", false
	}
	for _, g := range u.GetGroups() {
		if g == NodesGroup {
			return strings.TrimPrefix(u.GetName(), NodeUserPrefix), true
		}
	}
	return "", false
}

func noRelation(node string) string {
	return fmt.Sprintf("no relationship found between node '%s' and this object", node)
}

// Authorize decides requests by node identities; others get no opinion.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	node, ok := NodeIdentity(attrs.GetUser())
	if !ok {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if node == "" {
		return authorizer.DecisionNoOpinion, "unknown node", nil
	}
	if attrs.IsResourceRequest() {
		switch attrs.GetAPIGroup() {
		case "":
			switch attrs.GetResource() {
			case "secrets":
				return a.readNamespaced(node, kindSecret, attrs)
			case "configmaps":
				return a.readNamespaced(node, kindConfigMap, attrs)
			case "persistentvolumeclaims":
				return a.claim(node, attrs)
			case "persistentvolumes":
				return a.pv(node, attrs)
			case "pods":
				return a.pod(node, attrs)
			case "serviceaccounts":
				return a.serviceAccount(node, attrs)
			case "nodes":
				return a.nodeObject(node, attrs)
			}
		case "coordination.k8s.io":
			if attrs.GetResource() == "leases" {
				return a.lease(node, attrs)
			}
		case "storage.k8s.io":
			if attrs.GetResource() == "csinodes" {
				return a.ownNamed(node, attrs, "csinodes")
			}
		}
	}
	if rbac.RulesAllow(attrs, a.nodeRules...) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func allowIf(ok bool, reason string) (authorizer.Decision, string, error) {
	if ok {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, reason, nil
}

// readNamespaced allows get/list/watch of one named object its pods reference.
func (a *Authorizer) readNamespaced(node string, k kind, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.GetVerb() {
	case "get", "list", "watch":
	default:
		return authorizer.DecisionNoOpinion, "can only read resources of this type", nil
	}
	if attrs.GetSubresource() != "" {
		return authorizer.DecisionNoOpinion, "cannot read subresource", nil
	}
	if attrs.GetNamespace() == "" || attrs.GetName() == "" {
		return authorizer.DecisionNoOpinion, "can only read a named object of this type in a namespace", nil
	}
	return allowIf(a.graph.reachable(node, k, attrs.GetNamespace(), attrs.GetName()), noRelation(node))
}

// claim allows reading a referenced PVC and updating its status (expansion).
func (a *Authorizer) claim(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetSubresource() == "status" {
		switch attrs.GetVerb() {
		case "get", "update", "patch":
			return allowIf(a.graph.reachable(node, kindClaim, attrs.GetNamespace(), attrs.GetName()), noRelation(node))
		}
		return authorizer.DecisionNoOpinion, "can only get, update or patch persistentvolumeclaim status", nil
	}
	return a.readNamespaced(node, kindClaim, attrs)
}

// pv allows reading a PV bound to a claim its pods reference.
func (a *Authorizer) pv(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.GetVerb() {
	case "get", "list", "watch":
	default:
		return authorizer.DecisionNoOpinion, "can only read resources of this type", nil
	}
	if attrs.GetSubresource() != "" || attrs.GetName() == "" {
		return authorizer.DecisionNoOpinion, "can only read a named persistentvolume", nil
	}
	return allowIf(a.graph.pvReachable(node, attrs.GetName()), noRelation(node))
}

// pod allows reads of its own pods (lists and watches only with the
// spec.nodeName=NODE field selector), mirror-pod creation (NodeRestriction
// checks the pod), deletion, status writes and eviction of its own pods.
func (a *Authorizer) pod(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	ns, name := attrs.GetNamespace(), attrs.GetName()
	own := func() bool { return name != "" && a.graph.reachable(node, kindPod, ns, name) }
	switch sub, verb := attrs.GetSubresource(), attrs.GetVerb(); {
	case sub == "" && verb == "get":
		return allowIf(own(), noRelation(node))
	case sub == "" && (verb == "list" || verb == "watch"):
		reqs, err := attrs.GetFieldSelector()
		if err == nil {
			for _, r := range reqs {
				if r.Field == "spec.nodeName" && (r.Operator == selection.Equals || r.Operator == selection.DoubleEquals) && r.Value == node {
					return authorizer.DecisionAllow, "", nil
				}
			}
		}
		if own() {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "can only list/watch pods with spec.nodeName field selector", nil
	case sub == "" && verb == "create":
		return authorizer.DecisionAllow, "", nil
	case sub == "" && verb == "delete":
		return allowIf(own(), noRelation(node))
	case sub == "status" && (verb == "update" || verb == "patch" || verb == "get"):
		return allowIf(own(), noRelation(node))
	case sub == "eviction" && verb == "create":
		return allowIf(own(), noRelation(node))
	}
	return authorizer.DecisionNoOpinion, "node may not perform this request on pods", nil
}

// serviceAccount allows creating tokens for, and getting, the service
// accounts its pods run as (upstream lets the kubelet get them for image
// credential providers).
func (a *Authorizer) serviceAccount(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	sub, verb := attrs.GetSubresource(), attrs.GetVerb()
	if !(sub == "token" && verb == "create") && !(sub == "" && verb == "get") {
		return authorizer.DecisionNoOpinion, "can only get individual service accounts or create their tokens", nil
	}
	return allowIf(a.graph.reachable(node, kindServiceAccount, attrs.GetNamespace(), attrs.GetName()), noRelation(node))
}

// nodeObject allows reading nodes, creating a node (NodeRestriction checks
// the name) and updating or patching only its own Node and its status.
func (a *Authorizer) nodeObject(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch sub, verb := attrs.GetSubresource(), attrs.GetVerb(); {
	case sub == "" && (verb == "get" || verb == "list" || verb == "watch" || verb == "create"):
		return authorizer.DecisionAllow, "", nil
	case (sub == "" || sub == "status") && (verb == "update" || verb == "patch"):
		return allowIf(attrs.GetName() == node, "can only modify its own node object")
	}
	return authorizer.DecisionNoOpinion, "node may not perform this request on nodes", nil
}

// lease allows a node to manage only its own Lease in kube-node-lease.
func (a *Authorizer) lease(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetNamespace() != NodeLeaseNamespace {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("can only access leases in the %q namespace", NodeLeaseNamespace), nil
	}
	return a.ownNamed(node, attrs, "leases")
}

// ownNamed allows get/create/update/patch/delete of the object named after the
// node; create carries no name here, NodeRestriction checks it.
func (a *Authorizer) ownNamed(node string, attrs authorizer.Attributes, what string) (authorizer.Decision, string, error) {
	verb := attrs.GetVerb()
	switch verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return authorizer.DecisionNoOpinion, "can only get, create, update, patch, or delete " + what, nil
	}
	if attrs.GetSubresource() != "" {
		return authorizer.DecisionNoOpinion, "cannot access subresource of " + what, nil
	}
	if verb != "create" && attrs.GetName() != node {
		return authorizer.DecisionNoOpinion, "can only access " + what + " named after the node", nil
	}
	return authorizer.DecisionAllow, "", nil
}

// ConditionsAwareAuthorize is Authorize for conditions-aware callers.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions fails closed: the Node authorizer makes no conditional decisions.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor reports the system:node rules for a node identity (the
// graph-gated grants depend on object names and are not listable), and
// nothing for anyone else.
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if _, ok := NodeIdentity(u); !ok {
		return nil, nil, false, nil
	}
	var out []authorizer.ResourceRuleInfo
	for _, r := range a.nodeRules {
		out = append(out, &authorizer.DefaultResourceRuleInfo{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	return out, nil, true, nil
}
