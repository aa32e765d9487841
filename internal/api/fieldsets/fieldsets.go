// Package fieldsets holds, per kind, the fields that field selectors may
// name (the same ones kube-apiserver supports) and how to read them from an
// object. The registry's GetAttrs functions and the scheme's field label
// conversions both come from here, so the two cannot disagree.
package fieldsets

import (
	"strconv"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
)

// Func returns the selectable fields of an object.
type Func func(obj runtime.Object) fields.Set

// Kind pairs a kind with its field set function.
type Kind struct {
	GVK    schema.GroupVersionKind
	Fields Func
	// Labels, when set, maps the field selector labels clients use for this
	// kind to the keys of its field set (events.k8s.io says
	// "regarding.name" where the set, shared with core/v1, says
	// "involvedObject.name"). Without it the set's keys are the labels.
	Labels map[string]string
}

// EventsV1Labels maps events.k8s.io/v1 field selector labels to the event
// field set's keys, as upstream converts them.
var EventsV1Labels = map[string]string{
	"metadata.name":             "metadata.name",
	"metadata.namespace":        "metadata.namespace",
	"reason":                    "reason",
	"type":                      "type",
	"reportingController":       "reportingComponent",
	"regarding.kind":            "involvedObject.kind",
	"regarding.namespace":       "involvedObject.namespace",
	"regarding.name":            "involvedObject.name",
	"regarding.uid":             "involvedObject.uid",
	"regarding.apiVersion":      "involvedObject.apiVersion",
	"regarding.resourceVersion": "involvedObject.resourceVersion",
	"regarding.fieldPath":       "involvedObject.fieldPath",
}

// Kinds lists every kind whose field selectors go beyond metadata.name and
// metadata.namespace.
func Kinds() []Kind {
	return []Kind{
		{corev1.SchemeGroupVersion.WithKind("Pod"), func(o runtime.Object) fields.Set { return Pod(o.(*corev1.Pod)) }, nil},
		{corev1.SchemeGroupVersion.WithKind("Node"), func(o runtime.Object) fields.Set { return Node(o.(*corev1.Node)) }, nil},
		{corev1.SchemeGroupVersion.WithKind("Namespace"), func(o runtime.Object) fields.Set { return Namespace(o.(*corev1.Namespace)) }, nil},
		{corev1.SchemeGroupVersion.WithKind("Secret"), func(o runtime.Object) fields.Set { return Secret(o.(*corev1.Secret)) }, nil},
		{corev1.SchemeGroupVersion.WithKind("Event"), func(o runtime.Object) fields.Set { return Event(o.(*corev1.Event)) }, nil},
		{corev1.SchemeGroupVersion.WithKind("Service"), func(o runtime.Object) fields.Set { return Service(o.(*corev1.Service)) }, nil},
		{corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), func(o runtime.Object) fields.Set { return Meta(o, true) }, nil},
		{eventsv1.SchemeGroupVersion.WithKind("Event"), func(o runtime.Object) fields.Set { return EventsV1Event(o.(*eventsv1.Event)) }, EventsV1Labels},
		{appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), func(o runtime.Object) fields.Set { return ReplicaSet(o.(*appsv1.ReplicaSet)) }, nil},
		{certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), func(o runtime.Object) fields.Set {
			return CertificateSigningRequest(o.(*certificatesv1.CertificateSigningRequest))
		}, nil},
		{corev1.SchemeGroupVersion.WithKind("ReplicationController"), func(o runtime.Object) fields.Set {
			return ReplicationController(o.(*corev1.ReplicationController))
		}, nil},
		{batchv1.SchemeGroupVersion.WithKind("Job"), func(o runtime.Object) fields.Set { return Job(o.(*batchv1.Job)) }, nil},
	}
}

// Meta returns the object metadata fields: metadata.name, and
// metadata.namespace for namespaced kinds. Objects without metadata give an
// empty set.
func Meta(obj runtime.Object, namespaced bool) fields.Set {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fields.Set{}
	}
	return metaSet(m, namespaced)
}

func metaSet(m metav1.Object, namespaced bool) fields.Set {
	s := fields.Set{"metadata.name": m.GetName()}
	if namespaced {
		s["metadata.namespace"] = m.GetNamespace()
	}
	return s
}

// Pod returns a pod's selectable fields: metadata.name, metadata.namespace,
// spec.nodeName, spec.restartPolicy, spec.schedulerName,
// spec.serviceAccountName, spec.hostNetwork, status.phase, status.podIP,
// status.nominatedNodeName.
func Pod(p *corev1.Pod) fields.Set {
	s := metaSet(p, true)
	s["spec.nodeName"] = p.Spec.NodeName
	s["spec.restartPolicy"] = string(p.Spec.RestartPolicy)
	s["spec.schedulerName"] = p.Spec.SchedulerName
	s["spec.serviceAccountName"] = p.Spec.ServiceAccountName
	s["spec.hostNetwork"] = strconv.FormatBool(p.Spec.HostNetwork)
	s["status.phase"] = string(p.Status.Phase)
	podIP := ""
	if len(p.Status.PodIPs) > 0 {
		podIP = p.Status.PodIPs[0].IP
	} else {
		podIP = p.Status.PodIP
	}
	s["status.podIP"] = podIP
	s["status.nominatedNodeName"] = p.Status.NominatedNodeName
	return s
}

// Node returns a node's selectable fields: metadata.name, spec.unschedulable.
func Node(n *corev1.Node) fields.Set {
	s := metaSet(n, false)
	s["spec.unschedulable"] = strconv.FormatBool(n.Spec.Unschedulable)
	return s
}

// Namespace returns a namespace's selectable fields: metadata.name, status.phase.
func Namespace(n *corev1.Namespace) fields.Set {
	s := metaSet(n, false)
	s["status.phase"] = string(n.Status.Phase)
	return s
}

// Secret returns a secret's selectable fields: metadata.name,
// metadata.namespace, type.
func Secret(sec *corev1.Secret) fields.Set {
	s := metaSet(sec, true)
	s["type"] = string(sec.Type)
	return s
}

// Service returns a service's selectable fields: metadata.name,
// metadata.namespace, spec.clusterIP, spec.type.
func Service(svc *corev1.Service) fields.Set {
	s := metaSet(svc, true)
	s["spec.clusterIP"] = svc.Spec.ClusterIP
	s["spec.type"] = string(svc.Spec.Type)
	return s
}

// Event returns a core/v1 event's selectable fields: the metadata fields,
// involvedObject.{kind,namespace,name,uid,apiVersion,resourceVersion,fieldPath},
// reason, reportingComponent, source and type.
func Event(e *corev1.Event) fields.Set {
	s := metaSet(e, true)
	s["involvedObject.kind"] = e.InvolvedObject.Kind
	s["involvedObject.namespace"] = e.InvolvedObject.Namespace
	s["involvedObject.name"] = e.InvolvedObject.Name
	s["involvedObject.uid"] = string(e.InvolvedObject.UID)
	s["involvedObject.apiVersion"] = e.InvolvedObject.APIVersion
	s["involvedObject.resourceVersion"] = e.InvolvedObject.ResourceVersion
	s["involvedObject.fieldPath"] = e.InvolvedObject.FieldPath
	s["reason"] = e.Reason
	s["reportingComponent"] = e.ReportingController
	s["source"] = eventSource(e.Source.Component, e.ReportingController)
	s["type"] = e.Type
	return s
}

// eventSource is an event's "source" field: its source component, else
// (events written through events.k8s.io) its reporting controller, as
// upstream.
func eventSource(component, reportingController string) string {
	if component == "" {
		return reportingController
	}
	return component
}

// EventsV1Event returns an events.k8s.io/v1 event's selectable fields: the
// same set (and keys) as a core/v1 event, read from the events.k8s.io field
// names (regarding, reportingController, deprecatedSource); clients select
// on them through EventsV1Labels.
func EventsV1Event(e *eventsv1.Event) fields.Set {
	s := metaSet(e, true)
	s["involvedObject.kind"] = e.Regarding.Kind
	s["involvedObject.namespace"] = e.Regarding.Namespace
	s["involvedObject.name"] = e.Regarding.Name
	s["involvedObject.uid"] = string(e.Regarding.UID)
	s["involvedObject.apiVersion"] = e.Regarding.APIVersion
	s["involvedObject.resourceVersion"] = e.Regarding.ResourceVersion
	s["involvedObject.fieldPath"] = e.Regarding.FieldPath
	s["reason"] = e.Reason
	s["reportingComponent"] = e.ReportingController
	s["source"] = eventSource(e.DeprecatedSource.Component, e.ReportingController)
	s["type"] = e.Type
	return s
}

// ReplicaSet returns a replica set's selectable fields: the metadata fields
// and status.replicas.
func ReplicaSet(rs *appsv1.ReplicaSet) fields.Set {
	s := metaSet(rs, true)
	s["status.replicas"] = strconv.Itoa(int(rs.Status.Replicas))
	return s
}

// CertificateSigningRequest returns a CSR's selectable fields:
// metadata.name and spec.signerName.
func CertificateSigningRequest(csr *certificatesv1.CertificateSigningRequest) fields.Set {
	s := metaSet(csr, false)
	s["spec.signerName"] = csr.Spec.SignerName
	return s
}

// ReplicationController returns a replication controller's selectable
// fields: the metadata fields and status.replicas.
func ReplicationController(rc *corev1.ReplicationController) fields.Set {
	s := metaSet(rc, true)
	s["status.replicas"] = strconv.Itoa(int(rc.Status.Replicas))
	return s
}

// Job returns a job's selectable fields: the metadata fields and
// status.successful.
func Job(j *batchv1.Job) fields.Set {
	s := metaSet(j, true)
	s["status.successful"] = strconv.Itoa(int(j.Status.Succeeded))
	return s
}
