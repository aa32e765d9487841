// Package bootstrap holds the default ClusterRoles and ClusterRoleBindings
// upstream Kubernetes creates when the apiserver starts, as k8s.io/api
// objects, and Reconcile, which creates the missing ones.
package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Label and annotation keys upstream puts on bootstrap policy.
const (
	// AutoUpdateAnnotation marks an object the apiserver may reconcile at
	// start; "false" opts an object out.
	AutoUpdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"
	// BootstrappingLabel marks every default RBAC object.
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	// BootstrappingValue is BootstrappingLabel's value.
	BootstrappingValue = "rbac-defaults"

	// AggregateToAdmin, AggregateToEdit and AggregateToView are the labels
	// the admin, edit and view ClusterRoles aggregate by.
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// Node TLS bootstrap policy: the CSR auto-approval roles (upstream's
// names) and berth's bindings of them (kubeadm's, renamed).
const (
	// BootstrappersGroup is the group of every bootstrap token.
	BootstrappersGroup = "system:bootstrappers"
	// NodeClientCSRRole allows requesting a node client certificate for a
	// new node (auto-approved).
	NodeClientCSRRole = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"
	// SelfNodeClientCSRRole allows a node to renew its own client
	// certificate (auto-approved).
	SelfNodeClientCSRRole = "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"
	// NodeBootstrapperBinding binds system:node-bootstrapper to the bootstrappers.
	NodeBootstrapperBinding = "berth:kubelet-bootstrap"
	// NodeAutoApproveBootstrapBinding binds NodeClientCSRRole to the bootstrappers.
	NodeAutoApproveBootstrapBinding = "berth:node-autoapprove-bootstrap"
	// NodeAutoApproveRotationBinding binds SelfNodeClientCSRRole to system:nodes.
	NodeAutoApproveRotationBinding = "berth:node-autoapprove-certificate-rotation"
)

// IngressController names the built-in ingress controller's identity (the
// user of its client certificate), its ClusterRole and their binding.
const IngressController = "system:berth-ingress-controller"

// APIServerKubeletClientUser is the user of the apiserver's client
// certificate towards node agents (pods/log, exec, attach, port-forward,
// nodes/proxy); APIServerKubeletAPIAdminBinding grants it
// system:kubelet-api-admin, as k3s and kubeadm-era clusters bind it.
const (
	APIServerKubeletClientUser      = "kube-apiserver-kubelet-client"
	APIServerKubeletAPIAdminBinding = "berth:kube-apiserver-kubelet-api-admin"
)

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	eventsW   = []string{"create", "update", "patch"}
)

// rule builds a resource PolicyRule.
func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: append([]string(nil), verbs...), APIGroups: append([]string(nil), groups...), Resources: resources}
}

// named restricts a rule to resource names.
func named(r rbacv1.PolicyRule, names ...string) rbacv1.PolicyRule {
	r.ResourceNames = names
	return r
}

// urls builds a non-resource PolicyRule.
func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: append([]string(nil), verbs...), NonResourceURLs: paths}
}

func g(groups ...string) []string { return groups }

var core = g("")

func v(verbs ...string) []string { return verbs }

func clusterRole(name string, extraLabels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	l := map[string]string{BootstrappingLabel: BootstrappingValue}
	for k, val := range extraLabels {
		l[k] = val
	}
	return &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      l,
			Annotations: map[string]string{AutoUpdateAnnotation: "true"},
		},
		Rules: rules,
	}
}

func aggregated(name string, extraLabels map[string]string, selectorLabel string) *rbacv1.ClusterRole {
	r := clusterRole(name, extraLabels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{selectorLabel: "true"}},
	}}
	return r
}

// NodeRules are the rules of the system:node ClusterRole. The Node
// authorizer applies them to node identities for the resources its graph
// does not gate.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(v("create"), g("authentication.k8s.io"), "tokenreviews"),
		rule(v("create"), g("authorization.k8s.io"), "subjectaccessreviews", "localsubjectaccessreviews"),
		rule(read, core, "services"),
		rule(v("create", "get", "list", "watch"), core, "nodes"),
		rule(v("update", "patch"), core, "nodes/status"),
		rule(v("update", "patch"), core, "nodes"),
		rule(eventsW, g("", "events.k8s.io"), "events"),
		rule(read, core, "pods"),
		rule(v("create", "delete"), core, "pods"),
		rule(v("update", "patch"), core, "pods/status"),
		rule(v("create"), core, "pods/eviction"),
		rule(v("get"), core, "configmaps", "secrets"),
		rule(v("get"), core, "persistentvolumeclaims", "persistentvolumes"),
		rule(v("get"), core, "endpoints"),
		rule(v("create", "get", "list", "watch"), g("certificates.k8s.io"), "certificatesigningrequests"),
		rule(v("get", "create", "update", "patch", "delete"), g("coordination.k8s.io"), "leases"),
		rule(v("get"), g("storage.k8s.io"), "volumeattachments"),
		rule(v("create"), core, "serviceaccounts/token"),
		rule(v("get", "update", "patch"), core, "persistentvolumeclaims/status"),
		rule(read, g("storage.k8s.io"), "csidrivers"),
		rule(v("get", "create", "update", "patch", "delete"), g("storage.k8s.io"), "csinodes"),
		rule(read, g("node.k8s.io"), "runtimeclasses"),
	}
}

// ClusterRoles returns fresh copies of the default ClusterRoles. The
// aggregated ones (admin, edit, view) carry only their aggregationRule; the
// aggregation controller fills their rules.
func ClusterRoles() []*rbacv1.ClusterRole {
	discoveryURLs := []string{"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"}
	return []*rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			rule(v("*"), g("*"), "*"),
			urls(v("*"), "*"),
		),
		clusterRole("system:discovery", nil, urls(v("get"), discoveryURLs...)),
		clusterRole("system:monitoring", nil, urls(v("get"),
			"/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*")),
		clusterRole("system:basic-user", nil,
			rule(v("create"), g("authorization.k8s.io"), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule(v("create"), g("authentication.k8s.io"), "selfsubjectreviews"),
		),
		clusterRole("system:public-info-viewer", nil, urls(v("get"), "/healthz", "/livez", "/readyz", "/version", "/version/")),
		clusterRole("system:service-account-issuer-discovery", nil, urls(v("get"),
			"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/")),

		aggregated("admin", nil, AggregateToAdmin),
		aggregated("edit", map[string]string{AggregateToAdmin: "true"}, AggregateToEdit),
		aggregated("view", map[string]string{AggregateToEdit: "true"}, AggregateToView),
		clusterRole("system:aggregate-to-admin", map[string]string{AggregateToAdmin: "true"},
			rule(v("create"), g("authorization.k8s.io"), "localsubjectaccessreviews"),
			rule(readWrite, g("rbac.authorization.k8s.io"), "rolebindings", "roles"),
		),
		clusterRole("system:aggregate-to-edit", map[string]string{AggregateToEdit: "true"},
			rule(v("impersonate"), core, "serviceaccounts"),
			rule(write, core, "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
			rule(v("create"), core, "pods/eviction"),
			rule(write, core, "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events"),
			rule(v("create"), core, "serviceaccounts/token"),
			rule(write, g("apps"), "statefulsets", "statefulsets/scale", "daemonsets", "deployments",
				"deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"),
			rule(write, g("autoscaling"), "horizontalpodautoscalers"),
			rule(write, g("batch"), "jobs", "cronjobs"),
			rule(write, g("extensions"), "daemonsets", "deployments", "deployments/scale", "deployments/rollback",
				"ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
			rule(write, g("policy"), "poddisruptionbudgets"),
			rule(write, g("networking.k8s.io"), "networkpolicies", "ingresses"),
			rule(read, g("coordination.k8s.io"), "leases"),
		),
		clusterRole("system:aggregate-to-view", map[string]string{AggregateToView: "true"},
			rule(read, core, "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
			rule(read, core, "limitranges", "resourcequotas", "bindings", "events", "pods/status",
				"resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
			rule(read, core, "namespaces"),
			rule(read, g("discovery.k8s.io"), "endpointslices"),
			rule(read, g("apps"), "controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
				"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
				"replicasets", "replicasets/status", "replicasets/scale"),
			rule(read, g("autoscaling"), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
			rule(read, g("batch"), "jobs", "jobs/status", "cronjobs", "cronjobs/status"),
			rule(read, g("extensions"), "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
				"deployments/status", "ingresses", "ingresses/status", "replicasets", "replicasets/scale",
				"replicasets/status", "replicationcontrollers/scale", "networkpolicies"),
			rule(read, g("policy"), "poddisruptionbudgets", "poddisruptionbudgets/status"),
			rule(read, g("networking.k8s.io"), "networkpolicies", "ingresses", "ingresses/status"),
		),

		clusterRole("system:node", nil, NodeRules()...),
		// Upstream leaves binding it to the installer; berth binds it to
		// the bootstrappers (NodeBootstrapperBinding).
		clusterRole("system:node-bootstrapper", nil,
			rule(v("create", "get", "list", "watch"), g("certificates.k8s.io"), "certificatesigningrequests"),
		),
		// The CSR approver auto-approves node client certificates for
		// requesters allowed to create these subresources, as upstream.
		clusterRole(NodeClientCSRRole, nil,
			rule(v("create"), g("certificates.k8s.io"), "certificatesigningrequests/nodeclient"),
		),
		clusterRole(SelfNodeClientCSRRole, nil,
			rule(v("create"), g("certificates.k8s.io"), "certificatesigningrequests/selfnodeclient"),
		),
		clusterRole("system:auth-delegator", nil,
			rule(v("create"), g("authentication.k8s.io"), "tokenreviews"),
			rule(v("create"), g("authorization.k8s.io"), "subjectaccessreviews"),
		),
		// Full access to the agent API (upstream's, with the kubelet's
		// fine-grained authorization on).
		clusterRole("system:kubelet-api-admin", nil,
			rule(read, core, "nodes"),
			rule(v("proxy"), core, "nodes"),
			rule(v("*"), core, "nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"),
			rule(v("*"), core, "nodes/pods", "nodes/healthz", "nodes/configz"),
		),
		clusterRole("system:node-proxier", nil,
			rule(v("list", "watch"), core, "services", "endpoints"),
			rule(read, core, "nodes"),
			rule(eventsW, g("", "events.k8s.io"), "events"),
			rule(v("list", "watch"), g("discovery.k8s.io"), "endpointslices"),
		),
		clusterRole("system:kube-dns", nil, rule(v("list", "watch"), core, "endpoints", "services")),
		clusterRole("system:kube-scheduler", nil,
			rule(eventsW, g("", "events.k8s.io"), "events"),
			rule(v("create"), g("coordination.k8s.io"), "leases"),
			named(rule(v("get", "update"), g("coordination.k8s.io"), "leases"), "kube-scheduler"),
			rule(v("create"), core, "endpoints"),
			named(rule(v("get", "update"), core, "endpoints"), "kube-scheduler"),
			rule(read, core, "nodes"),
			rule(v("delete", "get", "list", "watch"), core, "pods"),
			rule(v("create"), core, "bindings", "pods/binding"),
			rule(v("patch", "update"), core, "pods/status"),
			rule(read, core, "replicationcontrollers", "services"),
			rule(read, g("apps", "extensions"), "replicasets"),
			rule(read, g("apps"), "statefulsets"),
			rule(read, g("policy"), "poddisruptionbudgets"),
			rule(read, core, "persistentvolumeclaims", "persistentvolumes"),
			rule(v("create"), g("authentication.k8s.io"), "tokenreviews"),
			rule(v("create"), g("authorization.k8s.io"), "subjectaccessreviews"),
			rule(read, g("storage.k8s.io"), "csinodes", "csidrivers", "csistoragecapacities", "storageclasses"),
			rule(read, core, "namespaces"),
		),
		clusterRole("system:kube-controller-manager", nil,
			rule(eventsW, g("", "events.k8s.io"), "events"),
			rule(v("create"), g("coordination.k8s.io"), "leases"),
			named(rule(v("get", "update"), g("coordination.k8s.io"), "leases"), "kube-controller-manager"),
			rule(v("create"), core, "secrets", "serviceaccounts"),
			rule(v("delete"), core, "secrets"),
			rule(v("get"), core, "configmaps", "namespaces", "secrets", "serviceaccounts"),
			rule(v("update"), core, "secrets", "serviceaccounts"),
			rule(v("create"), g("authentication.k8s.io"), "tokenreviews"),
			rule(v("create"), g("authorization.k8s.io"), "subjectaccessreviews"),
			rule(v("list", "watch"), g("*"), "*"),
			rule(v("create"), core, "serviceaccounts/token"),
		),
		// berth's ingress controller (berth/ingress), as k3s's Traefik
		// role: it reads what routes are built from and writes only the
		// Ingresses' status.
		clusterRole(IngressController, nil,
			rule(read, g("networking.k8s.io"), "ingresses", "ingressclasses"),
			rule(v("update"), g("networking.k8s.io"), "ingresses/status"),
			rule(read, core, "services", "secrets"),
			rule(read, g("discovery.k8s.io"), "endpointslices"),
		),
		// metrics-server's role, aggregated into view (so edit and admin):
		// whoever may read pods may `kubectl top` them.
		clusterRole("system:aggregated-metrics-reader", map[string]string{AggregateToView: "true", AggregateToEdit: "true", AggregateToAdmin: "true"},
			rule(read, g("metrics.k8s.io"), "pods", "nodes"),
		),
	}
}

func clusterRoleBinding(name, role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{BootstrappingLabel: BootstrappingValue},
			Annotations: map[string]string{AutoUpdateAnnotation: "true"},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: subjects,
	}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// ClusterRoleBindings returns fresh copies of the default ClusterRoleBindings.
// system:node is bound to nobody, as upstream: nodes are authorized by the
// Node authorizer.
func ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return []*rbacv1.ClusterRoleBinding{
		clusterRoleBinding("cluster-admin", "cluster-admin", group("system:masters")),
		clusterRoleBinding("system:monitoring", "system:monitoring", group("system:monitoring")),
		clusterRoleBinding("system:discovery", "system:discovery", group("system:authenticated")),
		clusterRoleBinding("system:basic-user", "system:basic-user", group("system:authenticated")),
		clusterRoleBinding("system:public-info-viewer", "system:public-info-viewer",
			group("system:authenticated"), group("system:unauthenticated")),
		clusterRoleBinding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery",
			group("system:serviceaccounts")),
		clusterRoleBinding("system:node", "system:node"),
		clusterRoleBinding("system:node-proxier", "system:node-proxier", userSubject("system:kube-proxy")),
		// berth's agent embeds the service proxy (as k3s's agent embeds
		// kube-proxy) and watches Services and EndpointSlices with the
		// node's own credential.
		clusterRoleBinding("berth:node-proxier", "system:node-proxier", group("system:nodes")),
		// Node TLS bootstrap, as kubeadm sets it up: bootstrap tokens may
		// request node client certificates, which are auto-approved, and
		// nodes may renew their own.
		clusterRoleBinding(NodeBootstrapperBinding, "system:node-bootstrapper", group(BootstrappersGroup)),
		clusterRoleBinding(NodeAutoApproveBootstrapBinding, NodeClientCSRRole, group(BootstrappersGroup)),
		clusterRoleBinding(NodeAutoApproveRotationBinding, SelfNodeClientCSRRole, group("system:nodes")),
		clusterRoleBinding("system:kube-dns", "system:kube-dns",
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kube-dns", Namespace: "kube-system"}),
		clusterRoleBinding("system:kube-scheduler", "system:kube-scheduler", userSubject("system:kube-scheduler")),
		// The apiserver reaches the agents' API with these rights only.
		clusterRoleBinding(APIServerKubeletAPIAdminBinding, "system:kubelet-api-admin", userSubject(APIServerKubeletClientUser)),
		clusterRoleBinding("system:kube-controller-manager", "system:kube-controller-manager",
			userSubject("system:kube-controller-manager")),
		clusterRoleBinding(IngressController, IngressController, userSubject(IngressController)),
	}
}

// Roles returns fresh copies of the default namespaced Roles, as
// upstream's bootstrap policy: kube-system's
// extension-apiserver-authentication-reader lets extension apiservers read
// the front-proxy trust configuration
// (kube-system/extension-apiserver-authentication).
func Roles() []*rbacv1.Role {
	return []*rbacv1.Role{{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "extension-apiserver-authentication-reader", Namespace: metav1.NamespaceSystem,
			Labels:      map[string]string{BootstrappingLabel: BootstrappingValue},
			Annotations: map[string]string{AutoUpdateAnnotation: "true"},
		},
		Rules: []rbacv1.PolicyRule{named(rule(read, g(""), "configmaps"), "extension-apiserver-authentication")},
	}}
}
