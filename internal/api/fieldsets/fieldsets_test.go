package fieldsets

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestFieldSets(t *testing.T) {
	two := int32(2)
	for name, tc := range map[string]struct {
		got  fields.Set
		want fields.Set
	}{
		"pod": {Pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec:   corev1.PodSpec{NodeName: "n1", RestartPolicy: corev1.RestartPolicyNever, SchedulerName: "s", ServiceAccountName: "sa", HostNetwork: true},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}, NominatedNodeName: "n2"}}),
			fields.Set{"metadata.name": "p", "metadata.namespace": "ns", "spec.nodeName": "n1", "spec.restartPolicy": "Never", "spec.schedulerName": "s",
				"spec.serviceAccountName": "sa", "spec.hostNetwork": "true", "status.phase": "Running", "status.podIP": "10.0.0.1", "status.nominatedNodeName": "n2"}},
		"pod with only podIP": {Pod(&corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.9"}}),
			fields.Set{"metadata.name": "", "metadata.namespace": "", "spec.nodeName": "", "spec.restartPolicy": "", "spec.schedulerName": "",
				"spec.serviceAccountName": "", "spec.hostNetwork": "false", "status.phase": "", "status.podIP": "10.0.0.9", "status.nominatedNodeName": ""}},
		"node":      {Node(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Unschedulable: true}}), fields.Set{"metadata.name": "n", "spec.unschedulable": "true"}},
		"namespace": {Namespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}), fields.Set{"metadata.name": "a", "status.phase": "Terminating"}},
		"secret":    {Secret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Type: corev1.SecretTypeTLS}), fields.Set{"metadata.name": "s", "metadata.namespace": "ns", "type": "kubernetes.io/tls"}},
		"replicaset": {ReplicaSet(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}, Status: appsv1.ReplicaSetStatus{Replicas: two}}),
			fields.Set{"metadata.name": "r", "metadata.namespace": "ns", "status.replicas": "2"}},
		"meta cluster": {Meta(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}}, false), fields.Set{"metadata.name": "pv"}},
	} {
		if len(tc.got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", name, tc.got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if tc.got[k] != v {
				t.Errorf("%s: %s = %q, want %q", name, k, tc.got[k], v)
			}
		}
	}
}

func TestEventFieldSetsAgree(t *testing.T) {
	core := Event(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, Reason: "R", Type: "Warning",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns", UID: "u"}, Source: corev1.EventSource{Component: "kubelet"}, ReportingController: "rc"})
	ev := EventsV1Event(&eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, Reason: "R", Type: "Warning",
		Regarding: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns", UID: "u"}, DeprecatedSource: corev1.EventSource{Component: "kubelet"}, ReportingController: "rc"})
	if len(core) != len(ev) {
		t.Fatalf("core %v vs events.k8s.io %v", core, ev)
	}
	for k, v := range core {
		if ev[k] != v {
			t.Errorf("%s: core %q, events.k8s.io %q", k, v, ev[k])
		}
	}
	if core["involvedObject.uid"] != "u" || core["source"] != "kubelet" || core["reportingComponent"] != "rc" {
		t.Errorf("core event fields %v", core)
	}
	// Regression (the Events conformance spec): an event without a source
	// component is selected by source=its reporting controller.
	if got := Event(&corev1.Event{ReportingController: "test-controller"})["source"]; got != "test-controller" {
		t.Errorf("source of an event with only a reporting controller: %q", got)
	}
	if got := EventsV1Event(&eventsv1.Event{ReportingController: "test-controller"})["source"]; got != "test-controller" {
		t.Errorf("events.k8s.io source of an event with only a reporting controller: %q", got)
	}
}

func TestKindsCoverTheirTypes(t *testing.T) {
	for _, k := range Kinds() {
		var obj runtime.Object
		switch k.GVK.Kind {
		case "Pod":
			obj = &corev1.Pod{}
		case "Node":
			obj = &corev1.Node{}
		case "Namespace":
			obj = &corev1.Namespace{}
		case "Secret":
			obj = &corev1.Secret{}
		case "Service":
			obj = &corev1.Service{}
		case "PersistentVolumeClaim":
			obj = &corev1.PersistentVolumeClaim{}
		case "ReplicaSet":
			obj = &appsv1.ReplicaSet{}
		case "ReplicationController":
			obj = &corev1.ReplicationController{}
		case "CertificateSigningRequest":
			obj = &certificatesv1.CertificateSigningRequest{}
		case "Job":
			obj = &batchv1.Job{}
		case "Event":
			if k.GVK.Group == "" {
				obj = &corev1.Event{}
			} else {
				obj = &eventsv1.Event{}
			}
		default:
			t.Fatalf("unexpected kind %v", k.GVK)
		}
		if set := k.Fields(obj); set["metadata.name"] != "" || len(set) == 0 {
			t.Errorf("%v: fields of an empty object = %v", k.GVK, set)
		}
	}
}
