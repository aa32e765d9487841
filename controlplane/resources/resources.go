// Package resources assembles the resources berth's apiserver serves: for
// each, a k8s.io/apiserver generic registry Store over the storage factory
// with its strategies, field selector attributes and indexes, plus the
// subresources (status, scale, binding, eviction, and the node-proxied
// log/exec/attach/portforward).
package resources

import (
	"fmt"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"net/http"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"berth/controlplane/apiserver"
	"berth/controlplane/registry"
	"berth/controlplane/registry/core/service"
	"berth/internal/errdefs"
)

// Config configures the served resources.
type Config struct {
	// Scheme knows every served type.
	Scheme *runtime.Scheme
	// Storage hands out etcd storage per resource (controlplane/storage).
	Storage generic.RESTOptionsGetter
	// NodeTransport carries proxied pod log/exec/attach/portforward requests
	// to the node agents (TLS, with the apiserver's client certificate).
	NodeTransport http.RoundTripper
	// ProxyTransport carries pods/proxy and services/proxy requests to
	// pods, and nodes/proxy requests to ports other than the agent's (as
	// kube-apiserver's proxy transport: TLS unverified, no client
	// certificate).
	ProxyTransport http.RoundTripper
	// ServiceAccountTokens, when set, serves serviceaccounts/token (the
	// TokenRequest API).
	ServiceAccountTokens *TokenRequestConfig
	// ServiceAllocators, when set, give Services their cluster IPs and
	// node ports.
	ServiceAllocators *service.Allocators
}

// Set is the built resources; Destroy releases their storage.
type Set struct {
	Resources []*apiserver.Resource
	stores    []*genericregistry.Store
	// Namespaces is the namespaces store, for lifecycle checks.
	Namespaces *genericregistry.Store
	// ByGVR finds a resource.
	ByGVR map[schema.GroupVersionResource]*apiserver.Resource
}

// Destroy stops every store's watch cache.
func (s *Set) Destroy() {
	for _, st := range s.stores {
		if st.DestroyFunc != nil {
			st.DestroyFunc()
		}
	}
}

// def describes one resource.
type def struct {
	gv         schema.GroupVersion
	resource   string
	singular   string
	kind       string
	namespaced bool
	short      []string
	categories []string
	newObj     func() runtime.Object
	newList    func() runtime.Object
	status     bool
	// approval serves /approval (certificate signing requests).
	approval bool
	scale    *scaleAdapter
	// ttl, when set, expires objects that long after their last write
	// (events, as kube-apiserver's --event-ttl).
	ttl time.Duration
}

// EventTTL is how long events are kept after their last update.
const EventTTL = time.Hour

// strategies are a resource's registry parts.
type strategies struct {
	main interface {
		rest.RESTCreateStrategy
		rest.RESTUpdateStrategy
		rest.RESTDeleteStrategy
	}
	status    rest.RESTUpdateStrategy
	approval  rest.RESTUpdateStrategy
	reset     rest.ResetFieldsStrategy
	table     rest.TableConvertor
	attrs     apistorage.AttrFunc
	predicate func(labels.Selector, fields.Selector) apistorage.SelectionPredicate
	triggers  apistorage.IndexerFuncs
	indexers  *cache.Indexers
}

func defs() []def {
	core, apps := corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion
	all := []string{"all"}
	return []def{
		{gv: core, resource: "namespaces", singular: "namespace", kind: "Namespace", short: []string{"ns"}, status: true,
			newObj: func() runtime.Object { return &corev1.Namespace{} }, newList: func() runtime.Object { return &corev1.NamespaceList{} }},
		{gv: core, resource: "pods", singular: "pod", kind: "Pod", namespaced: true, short: []string{"po"}, categories: all, status: true,
			newObj: func() runtime.Object { return &corev1.Pod{} }, newList: func() runtime.Object { return &corev1.PodList{} }},
		{gv: core, resource: "nodes", singular: "node", kind: "Node", short: []string{"no"}, status: true,
			newObj: func() runtime.Object { return &corev1.Node{} }, newList: func() runtime.Object { return &corev1.NodeList{} }},
		{gv: core, resource: "configmaps", singular: "configmap", kind: "ConfigMap", namespaced: true, short: []string{"cm"},
			newObj: func() runtime.Object { return &corev1.ConfigMap{} }, newList: func() runtime.Object { return &corev1.ConfigMapList{} }},
		{gv: core, resource: "secrets", singular: "secret", kind: "Secret", namespaced: true,
			newObj: func() runtime.Object { return &corev1.Secret{} }, newList: func() runtime.Object { return &corev1.SecretList{} }},
		{gv: core, resource: "events", singular: "event", kind: "Event", namespaced: true, short: []string{"ev"}, ttl: EventTTL,
			newObj: func() runtime.Object { return &corev1.Event{} }, newList: func() runtime.Object { return &corev1.EventList{} }},
		{gv: core, resource: "serviceaccounts", singular: "serviceaccount", kind: "ServiceAccount", namespaced: true, short: []string{"sa"},
			newObj: func() runtime.Object { return &corev1.ServiceAccount{} }, newList: func() runtime.Object { return &corev1.ServiceAccountList{} }},
		{gv: core, resource: "services", singular: "service", kind: "Service", namespaced: true, short: []string{"svc"}, categories: all, status: true,
			newObj: func() runtime.Object { return &corev1.Service{} }, newList: func() runtime.Object { return &corev1.ServiceList{} }},
		{gv: core, resource: "endpoints", singular: "endpoints", kind: "Endpoints", namespaced: true, short: []string{"ep"},
			newObj: func() runtime.Object { return &corev1.Endpoints{} }, newList: func() runtime.Object { return &corev1.EndpointsList{} }},
		{gv: core, resource: "persistentvolumes", singular: "persistentvolume", kind: "PersistentVolume", short: []string{"pv"}, status: true,
			newObj: func() runtime.Object { return &corev1.PersistentVolume{} }, newList: func() runtime.Object { return &corev1.PersistentVolumeList{} }},
		{gv: core, resource: "persistentvolumeclaims", singular: "persistentvolumeclaim", kind: "PersistentVolumeClaim", namespaced: true, short: []string{"pvc"}, status: true,
			newObj: func() runtime.Object { return &corev1.PersistentVolumeClaim{} }, newList: func() runtime.Object { return &corev1.PersistentVolumeClaimList{} }},
		{gv: apps, resource: "deployments", singular: "deployment", kind: "Deployment", namespaced: true, short: []string{"deploy"}, categories: all, status: true,
			scale:  deploymentScale,
			newObj: func() runtime.Object { return &appsv1.Deployment{} }, newList: func() runtime.Object { return &appsv1.DeploymentList{} }},
		{gv: apps, resource: "replicasets", singular: "replicaset", kind: "ReplicaSet", namespaced: true, short: []string{"rs"}, categories: all, status: true,
			scale:  replicaSetScale,
			newObj: func() runtime.Object { return &appsv1.ReplicaSet{} }, newList: func() runtime.Object { return &appsv1.ReplicaSetList{} }},
		{gv: coordinationv1.SchemeGroupVersion, resource: "leases", singular: "lease", kind: "Lease", namespaced: true,
			newObj: func() runtime.Object { return &coordinationv1.Lease{} }, newList: func() runtime.Object { return &coordinationv1.LeaseList{} }},
		{gv: eventsv1.SchemeGroupVersion, resource: "events", singular: "event", kind: "Event", namespaced: true, short: []string{"ev"}, ttl: EventTTL,
			newObj: func() runtime.Object { return &eventsv1.Event{} }, newList: func() runtime.Object { return &eventsv1.EventList{} }},
		{gv: discoveryv1.SchemeGroupVersion, resource: "endpointslices", singular: "endpointslice", kind: "EndpointSlice", namespaced: true,
			newObj: func() runtime.Object { return &discoveryv1.EndpointSlice{} }, newList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} }},
		{gv: storagev1.SchemeGroupVersion, resource: "storageclasses", singular: "storageclass", kind: "StorageClass", short: []string{"sc"},
			newObj: func() runtime.Object { return &storagev1.StorageClass{} }, newList: func() runtime.Object { return &storagev1.StorageClassList{} }},
		{gv: storagev1.SchemeGroupVersion, resource: "csidrivers", singular: "csidriver", kind: "CSIDriver",
			newObj: func() runtime.Object { return &storagev1.CSIDriver{} }, newList: func() runtime.Object { return &storagev1.CSIDriverList{} }},
		{gv: storagev1.SchemeGroupVersion, resource: "csinodes", singular: "csinode", kind: "CSINode",
			newObj: func() runtime.Object { return &storagev1.CSINode{} }, newList: func() runtime.Object { return &storagev1.CSINodeList{} }},
		{gv: rbacv1.SchemeGroupVersion, resource: "roles", singular: "role", kind: "Role", namespaced: true,
			newObj: func() runtime.Object { return &rbacv1.Role{} }, newList: func() runtime.Object { return &rbacv1.RoleList{} }},
		{gv: rbacv1.SchemeGroupVersion, resource: "clusterroles", singular: "clusterrole", kind: "ClusterRole",
			newObj: func() runtime.Object { return &rbacv1.ClusterRole{} }, newList: func() runtime.Object { return &rbacv1.ClusterRoleList{} }},
		{gv: rbacv1.SchemeGroupVersion, resource: "rolebindings", singular: "rolebinding", kind: "RoleBinding", namespaced: true,
			newObj: func() runtime.Object { return &rbacv1.RoleBinding{} }, newList: func() runtime.Object { return &rbacv1.RoleBindingList{} }},
		{gv: rbacv1.SchemeGroupVersion, resource: "clusterrolebindings", singular: "clusterrolebinding", kind: "ClusterRoleBinding",
			newObj: func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, newList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }},
		{gv: core, resource: "limitranges", singular: "limitrange", kind: "LimitRange", namespaced: true, short: []string{"limits"},
			newObj: func() runtime.Object { return &corev1.LimitRange{} }, newList: func() runtime.Object { return &corev1.LimitRangeList{} }},
		{gv: core, resource: "resourcequotas", singular: "resourcequota", kind: "ResourceQuota", namespaced: true, short: []string{"quota"}, status: true,
			newObj: func() runtime.Object { return &corev1.ResourceQuota{} }, newList: func() runtime.Object { return &corev1.ResourceQuotaList{} }},
		{gv: admissionregistrationv1.SchemeGroupVersion, resource: "mutatingwebhookconfigurations", singular: "mutatingwebhookconfiguration", kind: "MutatingWebhookConfiguration",
			categories: []string{"api-extensions"},
			newObj:     func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
			newList:    func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} }},
		{gv: admissionregistrationv1.SchemeGroupVersion, resource: "validatingwebhookconfigurations", singular: "validatingwebhookconfiguration", kind: "ValidatingWebhookConfiguration",
			categories: []string{"api-extensions"},
			newObj:     func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
			newList:    func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} }},
		{gv: certificatesv1.SchemeGroupVersion, resource: "certificatesigningrequests", singular: "certificatesigningrequest", kind: "CertificateSigningRequest",
			short: []string{"csr"}, status: true, approval: true,
			newObj:  func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
			newList: func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} }},
		{gv: core, resource: "podtemplates", singular: "podtemplate", kind: "PodTemplate", namespaced: true,
			newObj: func() runtime.Object { return &corev1.PodTemplate{} }, newList: func() runtime.Object { return &corev1.PodTemplateList{} }},
		{gv: nodev1.SchemeGroupVersion, resource: "runtimeclasses", singular: "runtimeclass", kind: "RuntimeClass",
			newObj: func() runtime.Object { return &nodev1.RuntimeClass{} }, newList: func() runtime.Object { return &nodev1.RuntimeClassList{} }},
		{gv: storagev1.SchemeGroupVersion, resource: "volumeattachments", singular: "volumeattachment", kind: "VolumeAttachment", status: true,
			newObj: func() runtime.Object { return &storagev1.VolumeAttachment{} }, newList: func() runtime.Object { return &storagev1.VolumeAttachmentList{} }},
		{gv: storagev1.SchemeGroupVersion, resource: "csistoragecapacities", singular: "csistoragecapacity", kind: "CSIStorageCapacity", namespaced: true,
			newObj:  func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
			newList: func() runtime.Object { return &storagev1.CSIStorageCapacityList{} }},
		{gv: networkingv1.SchemeGroupVersion, resource: "ingresses", singular: "ingress", kind: "Ingress", namespaced: true, short: []string{"ing"}, status: true,
			newObj: func() runtime.Object { return &networkingv1.Ingress{} }, newList: func() runtime.Object { return &networkingv1.IngressList{} }},
		{gv: networkingv1.SchemeGroupVersion, resource: "ingressclasses", singular: "ingressclass", kind: "IngressClass",
			newObj: func() runtime.Object { return &networkingv1.IngressClass{} }, newList: func() runtime.Object { return &networkingv1.IngressClassList{} }},
		{gv: core, resource: "replicationcontrollers", singular: "replicationcontroller", kind: "ReplicationController", namespaced: true,
			short: []string{"rc"}, categories: all, status: true, scale: replicationControllerScale,
			newObj:  func() runtime.Object { return &corev1.ReplicationController{} },
			newList: func() runtime.Object { return &corev1.ReplicationControllerList{} }},
		{gv: apps, resource: "daemonsets", singular: "daemonset", kind: "DaemonSet", namespaced: true, short: []string{"ds"}, categories: all, status: true,
			newObj: func() runtime.Object { return &appsv1.DaemonSet{} }, newList: func() runtime.Object { return &appsv1.DaemonSetList{} }},
		{gv: apps, resource: "controllerrevisions", singular: "controllerrevision", kind: "ControllerRevision", namespaced: true,
			newObj:  func() runtime.Object { return &appsv1.ControllerRevision{} },
			newList: func() runtime.Object { return &appsv1.ControllerRevisionList{} }},
		{gv: batchv1.SchemeGroupVersion, resource: "jobs", singular: "job", kind: "Job", namespaced: true, categories: all, status: true,
			newObj: func() runtime.Object { return &batchv1.Job{} }, newList: func() runtime.Object { return &batchv1.JobList{} }},
		{gv: batchv1.SchemeGroupVersion, resource: "cronjobs", singular: "cronjob", kind: "CronJob", namespaced: true, short: []string{"cj"}, categories: all, status: true,
			newObj: func() runtime.Object { return &batchv1.CronJob{} }, newList: func() runtime.Object { return &batchv1.CronJobList{} }},
		{gv: schedulingv1.SchemeGroupVersion, resource: "priorityclasses", singular: "priorityclass", kind: "PriorityClass", short: []string{"pc"},
			newObj: func() runtime.Object { return &schedulingv1.PriorityClass{} }, newList: func() runtime.Object { return &schedulingv1.PriorityClassList{} }},
		{gv: policyv1.SchemeGroupVersion, resource: "poddisruptionbudgets", singular: "poddisruptionbudget", kind: "PodDisruptionBudget", namespaced: true,
			short: []string{"pdb"}, status: true,
			newObj:  func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
			newList: func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} }},
		{gv: admissionregistrationv1.SchemeGroupVersion, resource: "validatingadmissionpolicies", singular: "validatingadmissionpolicy", kind: "ValidatingAdmissionPolicy",
			categories: []string{"api-extensions"}, status: true,
			newObj:  func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
			newList: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} }},
		{gv: admissionregistrationv1.SchemeGroupVersion, resource: "validatingadmissionpolicybindings", singular: "validatingadmissionpolicybinding", kind: "ValidatingAdmissionPolicyBinding",
			categories: []string{"api-extensions"},
			newObj:     func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
			newList:    func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} }},
		{gv: flowcontrolv1.SchemeGroupVersion, resource: "flowschemas", singular: "flowschema", kind: "FlowSchema", status: true,
			newObj: func() runtime.Object { return &flowcontrolv1.FlowSchema{} }, newList: func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} }},
		{gv: flowcontrolv1.SchemeGroupVersion, resource: "prioritylevelconfigurations", singular: "prioritylevelconfiguration", kind: "PriorityLevelConfiguration", status: true,
			newObj:  func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
			newList: func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} }},
		{gv: networkingv1.SchemeGroupVersion, resource: "servicecidrs", singular: "servicecidr", kind: "ServiceCIDR", status: true,
			newObj: func() runtime.Object { return &networkingv1.ServiceCIDR{} }, newList: func() runtime.Object { return &networkingv1.ServiceCIDRList{} }},
		{gv: networkingv1.SchemeGroupVersion, resource: "ipaddresses", singular: "ipaddress", kind: "IPAddress", short: []string{"ip"},
			newObj: func() runtime.Object { return &networkingv1.IPAddress{} }, newList: func() runtime.Object { return &networkingv1.IPAddressList{} }},
		{gv: apiextensionsv1.SchemeGroupVersion, resource: "customresourcedefinitions", singular: "customresourcedefinition", kind: "CustomResourceDefinition",
			short: []string{"crd", "crds"}, categories: []string{"api-extensions"}, status: true,
			newObj:  func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
			newList: func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} }},
		{gv: apiregistrationv1.SchemeGroupVersion, resource: "apiservices", singular: "apiservice", kind: "APIService",
			categories: []string{"api-extensions"}, status: true,
			newObj:  func() runtime.Object { return &apiregistrationv1.APIService{} },
			newList: func() runtime.Object { return &apiregistrationv1.APIServiceList{} }},
		{gv: apps, resource: "statefulsets", singular: "statefulset", kind: "StatefulSet", namespaced: true, short: []string{"sts"}, categories: all, status: true,
			scale:  statefulSetScale,
			newObj: func() runtime.Object { return &appsv1.StatefulSet{} }, newList: func() runtime.Object { return &appsv1.StatefulSetList{} }},
		{gv: autoscalingv2.SchemeGroupVersion, resource: "horizontalpodautoscalers", singular: "horizontalpodautoscaler", kind: "HorizontalPodAutoscaler",
			namespaced: true, short: []string{"hpa"}, categories: all, status: true,
			newObj:  func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			newList: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} }},
	}
}

// strategiesFor takes the resource's parts from controlplane/registry.
func strategiesFor(d def, parts map[schema.GroupResource]registry.Resource) (strategies, error) {
	gr := schema.GroupResource{Group: d.gv.Group, Resource: d.resource}
	p, ok := parts[gr]
	if !ok || p.Strategy == nil || p.Table == nil || p.AttrFunc == nil {
		return strategies{}, fmt.Errorf("resources: controlplane/registry has no strategy, table or attributes for %s: %w", gr, errdefs.ErrInvalidArgument)
	}
	if d.status && p.StatusStrategy == nil {
		return strategies{}, fmt.Errorf("resources: controlplane/registry has no status strategy for %s: %w", gr, errdefs.ErrInvalidArgument)
	}
	st := strategies{main: p.Strategy, reset: p.Strategy, table: p.Table, attrs: p.AttrFunc, predicate: p.PredicateFunc,
		triggers: p.TriggerFuncs, indexers: p.Indexers}
	if p.StatusStrategy != nil {
		st.status = p.StatusStrategy
	}
	if d.approval {
		if p.ApprovalStrategy == nil {
			return strategies{}, fmt.Errorf("resources: controlplane/registry has no approval strategy for %s: %w", gr, errdefs.ErrInvalidArgument)
		}
		st.approval = p.ApprovalStrategy
	}
	return st, nil
}

// Build creates every store. On error, the stores built so far are destroyed.
func Build(cfg Config) (_ *Set, err error) {
	if cfg.Scheme == nil || cfg.Storage == nil {
		return nil, fmt.Errorf("resources: Scheme and Storage are required: %w", errdefs.ErrInvalidArgument)
	}
	set := &Set{ByGVR: map[schema.GroupVersionResource]*apiserver.Resource{}}
	defer func() {
		if err != nil {
			set.Destroy()
		}
	}()
	var pods, nodes, services, endpoints, coreEvents *genericregistry.Store
	var eviction *evictionREST
	parts := registry.Resources(cfg.Scheme)
	for _, d := range defs() {
		gr := schema.GroupResource{Group: d.gv.Group, Resource: d.resource}
		st, err := strategiesFor(d, parts)
		if err != nil {
			return nil, err
		}
		if d.gv == eventsv1.SchemeGroupVersion && d.resource == "events" && coreEvents != nil {
			// events.k8s.io is a view of the core/v1 events (defined before it).
			res := &apiserver.Resource{
				GroupVersion: d.gv, Resource: d.resource, Kind: d.kind, SingularName: d.singular,
				Namespaced: d.namespaced, ShortNames: d.short, Categories: d.categories,
				Store:        newEventsView(coreEvents, st.main, st.table),
				Subresources: map[string]apiserver.Subresource{},
			}
			set.Resources = append(set.Resources, res)
			set.ByGVR[res.GroupVersionResource()] = res
			continue
		}
		store := &genericregistry.Store{
			NewFunc:                   d.newObj,
			NewListFunc:               d.newList,
			DefaultQualifiedResource:  gr,
			SingularQualifiedResource: schema.GroupResource{Group: d.gv.Group, Resource: d.singular},
			CreateStrategy:            st.main,
			UpdateStrategy:            st.main,
			DeleteStrategy:            st.main,
			ResetFieldsStrategy:       st.reset,
			TableConvertor:            st.table,
			PredicateFunc:             st.predicate,
		}
		if d.ttl > 0 {
			ttl := uint64(d.ttl.Seconds())
			store.TTLFunc = func(runtime.Object, uint64, bool) (uint64, error) { return ttl, nil }
		}
		opts := &generic.StoreOptions{RESTOptions: cfg.Storage, AttrFunc: st.attrs, TriggerFunc: st.triggers, Indexers: st.indexers}
		if err := store.CompleteWithOptions(opts); err != nil {
			return nil, fmt.Errorf("resources: %s: %w", gr, err)
		}
		set.stores = append(set.stores, store)
		res := &apiserver.Resource{
			GroupVersion: d.gv, Resource: d.resource, Kind: d.kind, SingularName: d.singular,
			Namespaced: d.namespaced, ShortNames: d.short, Categories: d.categories,
			Store: store, Subresources: map[string]apiserver.Subresource{},
		}
		if d.status {
			statusStore := *store
			statusStore.UpdateStrategy = st.status
			if r, ok := st.status.(rest.ResetFieldsStrategy); ok {
				statusStore.ResetFieldsStrategy = r
			}
			res.Subresources["status"] = apiserver.Subresource{Kind: res.GroupVersionKind(), Storage: &statusStore}
		}
		if d.approval {
			approvalStore := *store
			approvalStore.UpdateStrategy = st.approval
			if r, ok := st.approval.(rest.ResetFieldsStrategy); ok {
				approvalStore.ResetFieldsStrategy = r
			}
			res.Subresources["approval"] = apiserver.Subresource{Kind: res.GroupVersionKind(), Storage: &approvalStore}
		}
		if d.scale != nil {
			res.Subresources["scale"] = apiserver.Subresource{
				Kind:    autoscalingv1.SchemeGroupVersion.WithKind("Scale"),
				Storage: &scaleREST{store: store, adapter: d.scale, gr: gr},
			}
		}
		switch {
		case d.gv.Group == "" && d.resource == "namespaces":
			set.Namespaces = store
			store.ShouldDeleteDuringUpdate = namespaceFinalized
			res.Subresources["status"].Storage.(*genericregistry.Store).ShouldDeleteDuringUpdate = namespaceFinalized
			res.Store = &namespaceREST{Store: store}
			res.Subresources["finalize"] = apiserver.Subresource{Kind: res.GroupVersionKind(), Storage: newFinalizeOnly(*store, st.status)}
		case d.gv.Group == "" && d.resource == "pods":
			pods = store
			res.Subresources["binding"] = apiserver.Subresource{Kind: corev1.SchemeGroupVersion.WithKind("Binding"), Storage: &bindingREST{store: store}}
			status := res.Subresources["status"].Storage.(*genericregistry.Store)
			eviction = &evictionREST{store: store, status: status}
			res.Subresources["eviction"] = apiserver.Subresource{Kind: policyv1.SchemeGroupVersion.WithKind("Eviction"), Storage: eviction}
			serveEphemeralContainers(res, store, cfg.Scheme)
		case d.gv.Group == "" && d.resource == "nodes":
			nodes = store
		case d.gv.Group == "" && d.resource == "services":
			services = store
		case d.gv.Group == "" && d.resource == "endpoints":
			endpoints = store
		case d.gv.Group == "" && d.resource == "events":
			coreEvents = store
		case d.gv == apiextensionsv1.SchemeGroupVersion && d.resource == "customresourcedefinitions":
			res.Store = &crdREST{Store: store}
		}
		set.Resources = append(set.Resources, res)
		set.ByGVR[res.GroupVersionResource()] = res
	}
	if pdbs, ok := set.ByGVR[policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")]; ok && eviction != nil {
		eviction.budgets = pdbs.Store.(*genericregistry.Store)
		eviction.budgetStatus = pdbs.Subresources["status"].Storage.(*genericregistry.Store)
	}
	if cfg.ServiceAllocators != nil {
		if err := installServiceAllocators(set, cfg.ServiceAllocators); err != nil {
			return nil, err
		}
	}
	if cfg.ServiceAccountTokens != nil {
		if err := serveTokenRequest(set, *cfg.ServiceAccountTokens); err != nil {
			return nil, err
		}
	}
	serveHPAV1(set)
	ssr := selfSubjectReviews()
	set.Resources = append(set.Resources, ssr)
	set.ByGVR[ssr.GroupVersionResource()] = ssr
	if pods != nil && nodes != nil {
		proxy := &nodeProxy{pods: pods, nodes: nodes, transport: cfg.NodeTransport}
		podRes := set.ByGVR[corev1.SchemeGroupVersion.WithResource("pods")]
		podRes.Subresources["log"] = apiserver.Subresource{Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Connect: proxy.log, ConnectVerbs: []string{"get"}}
		podRes.Subresources["exec"] = apiserver.Subresource{Kind: corev1.SchemeGroupVersion.WithKind("PodExecOptions"), Connect: proxy.exec, ConnectVerbs: []string{"create", "get"}, ConnectOptions: execOptions}
		podRes.Subresources["attach"] = apiserver.Subresource{Kind: corev1.SchemeGroupVersion.WithKind("PodAttachOptions"), Connect: proxy.attach, ConnectVerbs: []string{"create", "get"}, ConnectOptions: attachOptions}
		podRes.Subresources["portforward"] = apiserver.Subresource{Kind: corev1.SchemeGroupVersion.WithKind("PodPortForwardOptions"), Connect: proxy.portForward, ConnectVerbs: []string{"create", "get"}, ConnectOptions: portForwardOptions}
		if services != nil && endpoints != nil {
			serveProxies(set, &objectProxy{pods: pods, services: services, endpoints: endpoints, nodes: nodes,
				transport: cfg.ProxyTransport, agentTransport: cfg.NodeTransport})
		}
	}
	return set, nil
}
