// Package registry lists berth's per-resource registry parts in one place,
// for the apiserver to build its stores from: for each served resource the
// strategy, the status strategy (when it has /status), the table
// convertor, and the field-selector attributes, predicate and indexes.
package registry

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"berth/controlplane/registry/admissionregistration/admissionpolicy"
	"berth/controlplane/registry/admissionregistration/webhookconfiguration"
	"berth/controlplane/registry/apiextensions/customresourcedefinition"
	"berth/controlplane/registry/apiregistration/apiservice"
	"berth/controlplane/registry/apps/controllerrevision"
	"berth/controlplane/registry/apps/daemonset"
	"berth/controlplane/registry/apps/deployment"
	"berth/controlplane/registry/apps/replicaset"
	"berth/controlplane/registry/apps/statefulset"
	"berth/controlplane/registry/autoscaling/horizontalpodautoscaler"
	"berth/controlplane/registry/base"
	"berth/controlplane/registry/batch/cronjob"
	"berth/controlplane/registry/batch/job"
	"berth/controlplane/registry/certificates/certificatesigningrequest"
	"berth/controlplane/registry/coordination/lease"
	"berth/controlplane/registry/core/configmap"
	"berth/controlplane/registry/core/endpoints"
	coreevent "berth/controlplane/registry/core/event"
	"berth/controlplane/registry/core/limitrange"
	"berth/controlplane/registry/core/namespace"
	"berth/controlplane/registry/core/node"
	"berth/controlplane/registry/core/persistentvolume"
	"berth/controlplane/registry/core/persistentvolumeclaim"
	"berth/controlplane/registry/core/pod"
	"berth/controlplane/registry/core/podtemplate"
	"berth/controlplane/registry/core/replicationcontroller"
	"berth/controlplane/registry/core/resourcequota"
	"berth/controlplane/registry/core/secret"
	"berth/controlplane/registry/core/service"
	"berth/controlplane/registry/core/serviceaccount"
	"berth/controlplane/registry/discovery/endpointslice"
	eventsevent "berth/controlplane/registry/events/event"
	"berth/controlplane/registry/flowcontrol/flowschema"
	"berth/controlplane/registry/flowcontrol/prioritylevel"
	"berth/controlplane/registry/networking/ingress"
	"berth/controlplane/registry/networking/ingressclass"
	"berth/controlplane/registry/networking/ipaddress"
	"berth/controlplane/registry/networking/servicecidr"
	"berth/controlplane/registry/node/runtimeclass"
	"berth/controlplane/registry/policy/poddisruptionbudget"
	"berth/controlplane/registry/rbac/clusterrole"
	"berth/controlplane/registry/rbac/clusterrolebinding"
	"berth/controlplane/registry/rbac/role"
	"berth/controlplane/registry/rbac/rolebinding"
	"berth/controlplane/registry/scheduling/priorityclass"
	"berth/controlplane/registry/storage/csidriver"
	"berth/controlplane/registry/storage/csinode"
	"berth/controlplane/registry/storage/csistoragecapacity"
	"berth/controlplane/registry/storage/storageclass"
	"berth/controlplane/registry/storage/volumeattachment"
)

// Strategy is what a resource's strategy implements: create, update and
// delete, and the fields it resets for server-side apply (pods also
// rest.RESTGracefulDeleteStrategy).
type Strategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
	rest.RESTDeleteStrategy
	rest.ResetFieldsStrategy
}

// Resource holds one resource's registry parts.
type Resource struct {
	// GroupResource names the resource (e.g. {"", "pods"}).
	GroupResource schema.GroupResource
	// Strategy is the main resource's strategy.
	Strategy Strategy
	// StatusStrategy is the /status strategy; nil when there is no /status.
	StatusStrategy Strategy
	// ApprovalStrategy is the /approval strategy (certificate signing
	// requests); nil for every other resource.
	ApprovalStrategy Strategy
	// Table prints the resource for kubectl get.
	Table rest.TableConvertor
	// AttrFunc gives an object's labels and selectable fields.
	AttrFunc storage.AttrFunc
	// PredicateFunc builds the storage predicate for label/field selectors.
	PredicateFunc func(labels.Selector, fields.Selector) storage.SelectionPredicate
	// TriggerFuncs and Indexers index the watch cache (pods by spec.nodeName);
	// nil for resources without indexes.
	TriggerFuncs storage.IndexerFuncs
	Indexers     *cache.Indexers
}

// Resources returns every resource berth's registry covers, keyed by
// group-resource; typer is berth's scheme. Note that core/v1 "events" and
// events.k8s.io "events" are two entries.
func Resources(typer runtime.ObjectTyper) map[schema.GroupResource]Resource {
	core := func(r string) schema.GroupResource { return corev1.SchemeGroupVersion.WithResource(r).GroupResource() }
	gr := func(gv schema.GroupVersion, r string) schema.GroupResource { return gv.WithResource(r).GroupResource() }
	list := []Resource{
		pods(typer),
		typed(typer, core("namespaces"), namespace.Kind),
		typed(typer, core("nodes"), node.Kind),
		typed(typer, core("configmaps"), configmap.Kind),
		typed(typer, core("secrets"), secret.Kind),
		typed(typer, core("serviceaccounts"), serviceaccount.Kind),
		typed(typer, core("events"), coreevent.Kind),
		typed(typer, core("endpoints"), endpoints.Kind),
		typed(typer, core("services"), service.Kind),
		typed(typer, core("persistentvolumes"), persistentvolume.Kind),
		typed(typer, core("persistentvolumeclaims"), persistentvolumeclaim.Kind),
		typed(typer, gr(appsv1.SchemeGroupVersion, "deployments"), deployment.Kind),
		typed(typer, gr(appsv1.SchemeGroupVersion, "replicasets"), replicaset.Kind),
		typed(typer, gr(coordinationv1.SchemeGroupVersion, "leases"), lease.Kind),
		typed(typer, gr(eventsv1.SchemeGroupVersion, "events"), eventsevent.Kind),
		typed(typer, gr(discoveryv1.SchemeGroupVersion, "endpointslices"), endpointslice.Kind),
		typed(typer, gr(storagev1.SchemeGroupVersion, "storageclasses"), storageclass.Kind),
		typed(typer, gr(storagev1.SchemeGroupVersion, "csidrivers"), csidriver.Kind),
		typed(typer, gr(storagev1.SchemeGroupVersion, "csinodes"), csinode.Kind),
		typed(typer, gr(rbacv1.SchemeGroupVersion, "roles"), role.Kind),
		typed(typer, gr(rbacv1.SchemeGroupVersion, "clusterroles"), clusterrole.Kind),
		typed(typer, gr(rbacv1.SchemeGroupVersion, "rolebindings"), rolebinding.Kind),
		typed(typer, gr(rbacv1.SchemeGroupVersion, "clusterrolebindings"), clusterrolebinding.Kind),
		typed(typer, core("limitranges"), limitrange.Kind),
		typed(typer, core("resourcequotas"), resourcequota.Kind),
		typed(typer, gr(admissionregistrationv1.SchemeGroupVersion, "mutatingwebhookconfigurations"), webhookconfiguration.MutatingKind),
		typed(typer, gr(admissionregistrationv1.SchemeGroupVersion, "validatingwebhookconfigurations"), webhookconfiguration.ValidatingKind),
		withApproval(typer, typed(typer, gr(certificatesv1.SchemeGroupVersion, "certificatesigningrequests"), certificatesigningrequest.Kind), certificatesigningrequest.ApprovalKind),
		typed(typer, core("podtemplates"), podtemplate.Kind),
		typed(typer, gr(nodev1.SchemeGroupVersion, "runtimeclasses"), runtimeclass.Kind),
		typed(typer, gr(storagev1.SchemeGroupVersion, "volumeattachments"), volumeattachment.Kind),
		typed(typer, gr(storagev1.SchemeGroupVersion, "csistoragecapacities"), csistoragecapacity.Kind),
		typed(typer, gr(networkingv1.SchemeGroupVersion, "ingresses"), ingress.Kind),
		typed(typer, gr(networkingv1.SchemeGroupVersion, "ingressclasses"), ingressclass.Kind),
		typed(typer, core("replicationcontrollers"), replicationcontroller.Kind),
		typed(typer, gr(appsv1.SchemeGroupVersion, "daemonsets"), daemonset.Kind),
		typed(typer, gr(appsv1.SchemeGroupVersion, "controllerrevisions"), controllerrevision.Kind),
		typed(typer, gr(batchv1.SchemeGroupVersion, "jobs"), job.Kind),
		typed(typer, gr(batchv1.SchemeGroupVersion, "cronjobs"), cronjob.Kind),
		typed(typer, gr(schedulingv1.SchemeGroupVersion, "priorityclasses"), priorityclass.Kind),
		typed(typer, gr(policyv1.SchemeGroupVersion, "poddisruptionbudgets"), poddisruptionbudget.Kind),
		typed(typer, gr(admissionregistrationv1.SchemeGroupVersion, "validatingadmissionpolicies"), admissionpolicy.PolicyKind),
		typed(typer, gr(admissionregistrationv1.SchemeGroupVersion, "validatingadmissionpolicybindings"), admissionpolicy.BindingKind),
		typed(typer, gr(flowcontrolv1.SchemeGroupVersion, "flowschemas"), flowschema.Kind),
		typed(typer, gr(flowcontrolv1.SchemeGroupVersion, "prioritylevelconfigurations"), prioritylevel.Kind),
		typed(typer, gr(networkingv1.SchemeGroupVersion, "servicecidrs"), servicecidr.Kind),
		typed(typer, gr(networkingv1.SchemeGroupVersion, "ipaddresses"), ipaddress.Kind),
		{GroupResource: gr(apiextensionsv1.SchemeGroupVersion, "customresourcedefinitions"), Strategy: customresourcedefinition.NewStrategy(typer),
			StatusStrategy: customresourcedefinition.NewStatusStrategy(typer), Table: customresourcedefinition.Table,
			AttrFunc: customresourcedefinition.GetAttrs, PredicateFunc: customresourcedefinition.Predicate},
		{GroupResource: gr(apiregistrationv1.SchemeGroupVersion, "apiservices"), Strategy: apiservice.NewStrategy(typer),
			StatusStrategy: apiservice.NewStatusStrategy(typer), Table: apiservice.Kind.Table, AttrFunc: apiservice.Kind.Attrs, PredicateFunc: apiservice.Kind.Predicate},
		typed(typer, gr(appsv1.SchemeGroupVersion, "statefulsets"), statefulset.Kind),
		typed(typer, schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, horizontalpodautoscaler.Kind),
	}
	out := make(map[schema.GroupResource]Resource, len(list))
	for _, r := range list {
		out[r.GroupResource] = r
	}
	return out
}

// typed returns the parts of a resource served by the typed strategies of
// kind (and /status when the kind has one).
func typed[T base.Object](typer runtime.ObjectTyper, gr schema.GroupResource, kind base.Kind[T]) Resource {
	r := Resource{GroupResource: gr, Strategy: kind.Strategy(typer), Table: kind.Table, AttrFunc: kind.Attrs, PredicateFunc: kind.Predicate}
	if kind.Status {
		r.StatusStrategy = kind.StatusStrategy(typer)
	}
	return r
}

// withApproval adds to r the /approval strategy of kind.
func withApproval[T base.Object](typer runtime.ObjectTyper, r Resource, kind base.Kind[T]) Resource {
	r.ApprovalStrategy = kind.StatusStrategy(typer)
	return r
}

// pods returns the pods' parts: Kind's with graceful deletion and the
// watch cache's spec.nodeName index.
func pods(typer runtime.ObjectTyper) Resource {
	r := typed(typer, corev1.SchemeGroupVersion.WithResource("pods").GroupResource(), pod.Kind)
	r.Strategy = pod.NewStrategy(typer)
	r.TriggerFuncs, r.Indexers = pod.TriggerFuncs(), pod.Indexers()
	return r
}
