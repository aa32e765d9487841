package openapi

import (
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"berth/internal/errdefs"
)

// The verbs a Resource may list, as in discovery.
const (
	VerbGet              = "get"
	VerbList             = "list"
	VerbWatch            = "watch"
	VerbCreate           = "create"
	VerbUpdate           = "update"
	VerbPatch            = "patch"
	VerbDelete           = "delete"
	VerbDeleteCollection = "deletecollection"
)

// allVerbs is every verb of a fully served resource, in discovery's order.
var allVerbs = []string{VerbCreate, VerbDelete, VerbDeleteCollection, VerbGet, VerbList, VerbPatch, VerbUpdate, VerbWatch}

// The subresources the documents know how to describe. Each has fixed
// operations, as upstream serves them:
//
//	status       get, put, patch of the resource's own kind
//	scale        get, put, patch of autoscaling/v1 Scale
//	binding      post of core/v1 Binding (pods)
//	eviction     post of policy/v1 Eviction (pods)
//	log          get, text/plain (pods)
//	exec         get and post, connect (pods)
//	attach       get and post, connect (pods)
//	portforward  get and post, connect (pods)
//	approval     get, put, patch of the resource's own kind (certificatesigningrequests)
//	ephemeralcontainers  get, put, patch of the resource's own kind (pods)
const (
	SubresourceStatus      = "status"
	SubresourceScale       = "scale"
	SubresourceBinding     = "binding"
	SubresourceEviction    = "eviction"
	SubresourceLog         = "log"
	SubresourceExec        = "exec"
	SubresourceAttach      = "attach"
	SubresourcePortForward = "portforward"
	SubresourceApproval    = "approval"
	SubresourceEphemeral   = "ephemeralcontainers"
)

// Resource is one REST resource the apiserver serves, with what the OpenAPI
// documents need to describe it.
type Resource struct {
	// GVK is the kind stored under this resource, e.g. {"", "v1", "Pod"}.
	GVK schema.GroupVersionKind
	// Resource is the lower-case plural name in the URL, e.g. "pods".
	Resource string
	// Namespaced is true for resources under /namespaces/{namespace}/.
	Namespaced bool
	// Verbs is the set of verbs served (VerbGet, VerbList, …). Each maps to
	// operations: list → GET on the collection (and across namespaces),
	// watch → the /watch/ paths, create → POST, deletecollection → DELETE
	// on the collection, get/update/patch/delete → GET/PUT/PATCH/DELETE on
	// the item.
	Verbs []string
	// Subresources lists the subresources served (SubresourceStatus, …).
	Subresources []string
	// Object is a zero value of the kind's Go type, e.g. &corev1.Pod{}.
	Object runtime.Object
	// List is a zero value of the kind's list type, e.g. &corev1.PodList{};
	// required when Verbs contains list, watch or deletecollection.
	List runtime.Object
}

// Info is the document-wide information of both documents.
type Info struct {
	// Title is the info.title of the documents; "Kubernetes" when empty,
	// as upstream.
	Title string
	// Version is info.version, the server's version, e.g. "v1.37.2".
	Version string
	// ServerSideApply lists application/apply-patch+yaml among the content
	// types of every PATCH operation (and its force parameter); set it only
	// when the apiserver implements server-side apply.
	ServerSideApply bool
}

// DefaultResources returns every resource berth's apiserver serves (issue 4),
// with upstream's verbs and the subresources berth implements.
func DefaultResources() []Resource {
	core := func(kind, resource string, namespaced bool, obj, list runtime.Object, subs ...string) Resource {
		return Resource{GVK: corev1.SchemeGroupVersion.WithKind(kind), Resource: resource, Namespaced: namespaced,
			Verbs: allVerbs, Subresources: subs, Object: obj, List: list}
	}
	in := func(gv schema.GroupVersion, kind, resource string, namespaced bool, obj, list runtime.Object, subs ...string) Resource {
		return Resource{GVK: gv.WithKind(kind), Resource: resource, Namespaced: namespaced,
			Verbs: allVerbs, Subresources: subs, Object: obj, List: list}
	}
	namespaces := core("Namespace", "namespaces", false, &corev1.Namespace{}, &corev1.NamespaceList{}, SubresourceStatus)
	// Upstream namespaces have no deletecollection.
	namespaces.Verbs = []string{VerbCreate, VerbDelete, VerbGet, VerbList, VerbPatch, VerbUpdate, VerbWatch}
	return []Resource{
		namespaces,
		core("Pod", "pods", true, &corev1.Pod{}, &corev1.PodList{},
			SubresourceStatus, SubresourceBinding, SubresourceEviction, SubresourceEphemeral, SubresourceLog,
			SubresourceExec, SubresourceAttach, SubresourcePortForward),
		core("Node", "nodes", false, &corev1.Node{}, &corev1.NodeList{}, SubresourceStatus),
		core("Event", "events", true, &corev1.Event{}, &corev1.EventList{}),
		core("ConfigMap", "configmaps", true, &corev1.ConfigMap{}, &corev1.ConfigMapList{}),
		core("Secret", "secrets", true, &corev1.Secret{}, &corev1.SecretList{}),
		core("ServiceAccount", "serviceaccounts", true, &corev1.ServiceAccount{}, &corev1.ServiceAccountList{}),
		core("Service", "services", true, &corev1.Service{}, &corev1.ServiceList{}, SubresourceStatus),
		core("Endpoints", "endpoints", true, &corev1.Endpoints{}, &corev1.EndpointsList{}),
		core("PersistentVolume", "persistentvolumes", false, &corev1.PersistentVolume{}, &corev1.PersistentVolumeList{}, SubresourceStatus),
		core("PersistentVolumeClaim", "persistentvolumeclaims", true, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolumeClaimList{}, SubresourceStatus),
		in(appsv1.SchemeGroupVersion, "Deployment", "deployments", true, &appsv1.Deployment{}, &appsv1.DeploymentList{}, SubresourceStatus, SubresourceScale),
		in(appsv1.SchemeGroupVersion, "ReplicaSet", "replicasets", true, &appsv1.ReplicaSet{}, &appsv1.ReplicaSetList{}, SubresourceStatus, SubresourceScale),
		in(coordinationv1.SchemeGroupVersion, "Lease", "leases", true, &coordinationv1.Lease{}, &coordinationv1.LeaseList{}),
		in(eventsv1.SchemeGroupVersion, "Event", "events", true, &eventsv1.Event{}, &eventsv1.EventList{}),
		in(discoveryv1.SchemeGroupVersion, "EndpointSlice", "endpointslices", true, &discoveryv1.EndpointSlice{}, &discoveryv1.EndpointSliceList{}),
		in(storagev1.SchemeGroupVersion, "StorageClass", "storageclasses", false, &storagev1.StorageClass{}, &storagev1.StorageClassList{}),
		in(storagev1.SchemeGroupVersion, "CSIDriver", "csidrivers", false, &storagev1.CSIDriver{}, &storagev1.CSIDriverList{}),
		in(storagev1.SchemeGroupVersion, "CSINode", "csinodes", false, &storagev1.CSINode{}, &storagev1.CSINodeList{}),
		in(rbacv1.SchemeGroupVersion, "Role", "roles", true, &rbacv1.Role{}, &rbacv1.RoleList{}),
		in(rbacv1.SchemeGroupVersion, "RoleBinding", "rolebindings", true, &rbacv1.RoleBinding{}, &rbacv1.RoleBindingList{}),
		in(rbacv1.SchemeGroupVersion, "ClusterRole", "clusterroles", false, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleList{}),
		in(rbacv1.SchemeGroupVersion, "ClusterRoleBinding", "clusterrolebindings", false, &rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRoleBindingList{}),
		core("LimitRange", "limitranges", true, &corev1.LimitRange{}, &corev1.LimitRangeList{}),
		core("ResourceQuota", "resourcequotas", true, &corev1.ResourceQuota{}, &corev1.ResourceQuotaList{}, SubresourceStatus),
		in(admissionregistrationv1.SchemeGroupVersion, "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", false,
			&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfigurationList{}),
		in(admissionregistrationv1.SchemeGroupVersion, "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", false,
			&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfigurationList{}),
		in(certificatesv1.SchemeGroupVersion, "CertificateSigningRequest", "certificatesigningrequests", false,
			&certificatesv1.CertificateSigningRequest{}, &certificatesv1.CertificateSigningRequestList{}, SubresourceStatus, SubresourceApproval),
		core("PodTemplate", "podtemplates", true, &corev1.PodTemplate{}, &corev1.PodTemplateList{}),
		in(nodev1.SchemeGroupVersion, "RuntimeClass", "runtimeclasses", false, &nodev1.RuntimeClass{}, &nodev1.RuntimeClassList{}),
		in(storagev1.SchemeGroupVersion, "VolumeAttachment", "volumeattachments", false, &storagev1.VolumeAttachment{}, &storagev1.VolumeAttachmentList{}, SubresourceStatus),
		in(storagev1.SchemeGroupVersion, "CSIStorageCapacity", "csistoragecapacities", true, &storagev1.CSIStorageCapacity{}, &storagev1.CSIStorageCapacityList{}),
		in(networkingv1.SchemeGroupVersion, "Ingress", "ingresses", true, &networkingv1.Ingress{}, &networkingv1.IngressList{}, SubresourceStatus),
		in(networkingv1.SchemeGroupVersion, "IngressClass", "ingressclasses", false, &networkingv1.IngressClass{}, &networkingv1.IngressClassList{}),
		core("ReplicationController", "replicationcontrollers", true, &corev1.ReplicationController{}, &corev1.ReplicationControllerList{}, SubresourceStatus, SubresourceScale),
		in(appsv1.SchemeGroupVersion, "DaemonSet", "daemonsets", true, &appsv1.DaemonSet{}, &appsv1.DaemonSetList{}, SubresourceStatus),
		in(appsv1.SchemeGroupVersion, "ControllerRevision", "controllerrevisions", true, &appsv1.ControllerRevision{}, &appsv1.ControllerRevisionList{}),
		in(batchv1.SchemeGroupVersion, "Job", "jobs", true, &batchv1.Job{}, &batchv1.JobList{}, SubresourceStatus),
		in(batchv1.SchemeGroupVersion, "CronJob", "cronjobs", true, &batchv1.CronJob{}, &batchv1.CronJobList{}, SubresourceStatus),
		in(schedulingv1.SchemeGroupVersion, "PriorityClass", "priorityclasses", false, &schedulingv1.PriorityClass{}, &schedulingv1.PriorityClassList{}),
		in(policyv1.SchemeGroupVersion, "PodDisruptionBudget", "poddisruptionbudgets", true, &policyv1.PodDisruptionBudget{}, &policyv1.PodDisruptionBudgetList{}, SubresourceStatus),
		in(admissionregistrationv1.SchemeGroupVersion, "ValidatingAdmissionPolicy", "validatingadmissionpolicies", false,
			&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyList{}, SubresourceStatus),
		in(admissionregistrationv1.SchemeGroupVersion, "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", false,
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}),
		in(flowcontrolv1.SchemeGroupVersion, "FlowSchema", "flowschemas", false, &flowcontrolv1.FlowSchema{}, &flowcontrolv1.FlowSchemaList{}, SubresourceStatus),
		in(flowcontrolv1.SchemeGroupVersion, "PriorityLevelConfiguration", "prioritylevelconfigurations", false,
			&flowcontrolv1.PriorityLevelConfiguration{}, &flowcontrolv1.PriorityLevelConfigurationList{}, SubresourceStatus),
		in(networkingv1.SchemeGroupVersion, "ServiceCIDR", "servicecidrs", false, &networkingv1.ServiceCIDR{}, &networkingv1.ServiceCIDRList{}, SubresourceStatus),
		in(networkingv1.SchemeGroupVersion, "IPAddress", "ipaddresses", false, &networkingv1.IPAddress{}, &networkingv1.IPAddressList{}),
		in(appsv1.SchemeGroupVersion, "StatefulSet", "statefulsets", true, &appsv1.StatefulSet{}, &appsv1.StatefulSetList{}, SubresourceStatus, SubresourceScale),
		in(autoscalingv2.SchemeGroupVersion, "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, &autoscalingv2.HorizontalPodAutoscaler{}, &autoscalingv2.HorizontalPodAutoscalerList{}, SubresourceStatus),
		in(autoscalingv1.SchemeGroupVersion, "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, &autoscalingv1.HorizontalPodAutoscaler{}, &autoscalingv1.HorizontalPodAutoscalerList{}, SubresourceStatus),
		// Not stored: create only (kubectl auth whoami).
		{GVK: authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), Resource: "selfsubjectreviews",
			Verbs: []string{VerbCreate}, Object: &authenticationv1.SelfSubjectReview{}},
	}
}

// validateResources checks the list New was given; every problem names the
// resource and the field.
func validateResources(resources []Resource) error {
	if len(resources) == 0 {
		return fmt.Errorf("openapi: resources: empty list: %w", errdefs.ErrInvalidArgument)
	}
	seen := map[string]bool{}
	for i, r := range resources {
		where := fmt.Sprintf("openapi: resources[%d] (%s)", i, r.Resource)
		if r.Resource == "" {
			return fmt.Errorf("%s: resource: must not be empty: %w", where, errdefs.ErrInvalidArgument)
		}
		if r.GVK.Version == "" || r.GVK.Kind == "" {
			return fmt.Errorf("%s: gvk %q: version and kind are required: %w", where, r.GVK, errdefs.ErrInvalidArgument)
		}
		key := r.GVK.GroupVersion().String() + "/" + r.Resource
		if seen[key] {
			return fmt.Errorf("%s: duplicate resource %s: %w", where, key, errdefs.ErrInvalidArgument)
		}
		seen[key] = true
		if r.Object == nil {
			return fmt.Errorf("%s: object: must be a zero value of the kind's Go type: %w", where, errdefs.ErrInvalidArgument)
		}
		if len(r.Verbs) == 0 {
			return fmt.Errorf("%s: verbs: must not be empty: %w", where, errdefs.ErrInvalidArgument)
		}
		for _, v := range r.Verbs {
			if !slices.Contains(allVerbs, v) {
				return fmt.Errorf("%s: verbs: unknown verb %q (want one of %v): %w", where, v, allVerbs, errdefs.ErrInvalidArgument)
			}
			if (v == VerbList || v == VerbWatch || v == VerbDeleteCollection) && r.List == nil {
				return fmt.Errorf("%s: list: required for verb %q: %w", where, v, errdefs.ErrInvalidArgument)
			}
		}
		for _, s := range r.Subresources {
			if _, ok := subresourceOps[s]; !ok {
				return fmt.Errorf("%s: subresources: unknown subresource %q: %w", where, s, errdefs.ErrInvalidArgument)
			}
		}
	}
	return nil
}
