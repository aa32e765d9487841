package podworker

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/dns"
	"berth/cri"
)

// Event reasons and messages the worker records, as the kubelet records them
// (pkg/kubelet/events and kuberuntime). The image events (Pulling, Pulled,
// BackOff, Failed, InspectFailed, ErrImageNeverPull) come from
// agent/images, Unhealthy and the hook events from probes.
const (
	// ReasonCreated is a container created (Normal, on the container).
	ReasonCreated = "Created"
	// ReasonStarted is a container started (Normal, on the container).
	ReasonStarted = "Started"
	// ReasonFailed is a container that could not be created or started,
	// or whose image is not available (Warning, on the container; message
	// "Error: <why>").
	ReasonFailed = "Failed"
	// ReasonBackOff is a container held back by its restart back-off
	// (Warning, on the container).
	ReasonBackOff = "BackOff"
	// ReasonSandboxChanged is a pod whose sandbox is gone or changed and is
	// made again (Normal, on the pod).
	ReasonSandboxChanged = "SandboxChanged"
	// ReasonFailedCreatePodSandBox is a RunPodSandbox that failed (Warning,
	// on the pod).
	ReasonFailedCreatePodSandBox = "FailedCreatePodSandBox"
	// ReasonFailedPodSandBoxStatus is a sandbox just run whose status cannot
	// be read (Warning, on the pod).
	ReasonFailedPodSandBoxStatus = "FailedPodSandBoxStatus"
	// ReasonNetworkNotReady is a pod that waits for the pod network
	// (Warning, on the pod).
	ReasonNetworkNotReady = "NetworkNotReady"
	// ReasonFailedKillPod is a pod that could not be stopped (Warning, on
	// the pod).
	ReasonFailedKillPod = "FailedKillPod"

	// sandboxChangedMessage is upstream's SandboxChanged message.
	sandboxChangedMessage = "Pod sandbox changed, it will be killed and re-created."
	// networkNotReadyMessage starts upstream's NetworkNotReady message.
	networkNotReadyMessage = "network is not ready"
)

// podEvent records an event on the pod itself, if there is a recorder.
func (w *worker) podEvent(pod *v1.Pod, eventType, reason, message string) {
	if rec := w.m.cfg.Recorder; rec != nil && pod != nil {
		rec.Eventf(pod, eventType, reason, "%s", message)
	}
}

// failedEvent records the Failed event of a container that could not be
// created or started, or whose image is not available: "Error: <why>", as
// the kubelet's startContainer.
func (w *worker) failedEvent(pod *v1.Pod, container, why string) {
	w.event(pod, container, v1.EventTypeWarning, ReasonFailed, "Error: "+why)
}

// backOffEvent records that container waits out its restart back-off, as
// the kubelet's doBackOff: "Back-off restarting failed container NAME in
// pod NAME_NAMESPACE(UID)".
func (w *worker) backOffEvent(pod *v1.Pod, container string) {
	w.event(pod, container, v1.EventTypeWarning, ReasonBackOff,
		fmt.Sprintf("Back-off restarting failed container %s in pod %s", container, formatPod(pod)))
}

// dnsEvents records the DNS warnings of the pod's sandbox config
// (DNSConfigForming, MissingClusterDNS) as Warning events on the pod, and
// those the kubelet also records on its Node (MissingClusterDNS) on the
// node named by ContainerOptions.NodeName.
func (w *worker) dnsEvents(pod *v1.Pod, warnings []dns.Warning) {
	for _, warn := range warnings {
		w.podEvent(pod, v1.EventTypeWarning, warn.Reason, warn.Message)
		if warn.NodeMessage != "" {
			w.nodeEvent(v1.EventTypeWarning, warn.Reason, warn.NodeMessage)
		}
	}
}

// nodeEvent records an event on the agent's Node, if there is a recorder
// and a node name. The reference is the kubelet's: kind Node, the node's
// name as its UID, no namespace.
func (w *worker) nodeEvent(eventType, reason, message string) {
	rec, name := w.m.cfg.Recorder, w.m.cfg.ContainerOptions.NodeName
	if rec == nil || name == "" {
		return
	}
	rec.Eventf(&v1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}, eventType, reason, "%s", message)
}

// formatPod is upstream's format.Pod: NAME_NAMESPACE(UID).
func formatPod(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// grpcMessage is how the kubelet shows a runtime error in an event where it
// prints the error itself: "rpc error: code = CODE desc = MESSAGE".
func grpcMessage(err error) string {
	var ce *cri.Error
	if errors.As(err, &ce) {
		return fmt.Sprintf("rpc error: code = %s desc = %s", ce.Code, ce.Message)
	}
	return err.Error()
}

// statusMessage is how the kubelet shows a runtime error after "Error: ":
// the gRPC status's message alone.
func statusMessage(err error) string {
	var ce *cri.Error
	if errors.As(err, &ce) {
		return ce.Message
	}
	return err.Error()
}
