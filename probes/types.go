package probes

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// ProbeType says which of a container's probes a worker runs.
type ProbeType int

// The probe types.
const (
	// Liveness: failing restarts the container.
	Liveness ProbeType = iota
	// Readiness: decides the container's ready.
	Readiness
	// Startup: holds back liveness and readiness until it succeeds.
	Startup
)

// String is the kubelet's name of the type, used in events and metrics:
// "Liveness", "Readiness", "Startup".
func (t ProbeType) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "UNKNOWN"
}

// spec returns the container's probe of type t (nil if none).
func (t ProbeType) spec(c *v1.Container) *v1.Probe {
	switch t {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	case Startup:
		return c.StartupProbe
	}
	return nil
}

// initialResult is what a worker publishes for a new container before its
// first conclusive probe, as the kubelet: not ready, alive, not started.
func (t ProbeType) initialResult() Result {
	switch t {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// Update is a change of a probe's published result for a container. The
// agent consumes them from Manager.Updates: a Liveness or Startup Failure
// means the container must be killed and restarted per its restart policy;
// Readiness changes its ready; Startup Success marks it started.
type Update struct {
	// ContainerID is the container's ID as the pod status gave it ("containerd://…").
	ContainerID string
	// PodUID and ContainerName say whose container it is.
	PodUID        types.UID
	ContainerName string
	// Type is which probe.
	Type ProbeType
	// Result is Success, Failure, or Unknown (a startup probe not concluded).
	Result Result
	// Message is the output of the probe that decided the result ("" for the
	// initial value of a new container), e.g. "HTTP probe failed with statuscode: 500".
	Message string
}

// EventRecorder records Kubernetes events; client-go's record.EventRecorder
// satisfies it. Probe events are recorded on the container's reference
// (the pod with fieldPath spec.containers{name}), as the kubelet does.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Event reasons, the kubelet's.
const (
	// ReasonUnhealthy is a probe that failed or errored.
	ReasonUnhealthy = "Unhealthy"
	// ReasonProbeWarning is a probe that passed with a warning.
	ReasonProbeWarning = "ProbeWarning"
	// ReasonFailedPostStartHook is a postStart hook that failed (the agent records it).
	ReasonFailedPostStartHook = "FailedPostStartHook"
	// ReasonFailedPreStopHook is a preStop hook that failed (the agent records it).
	ReasonFailedPreStopHook = "FailedPreStopHook"
	// ReasonLifecycleHTTPFallback is an HTTPS hook retried over HTTP.
	ReasonLifecycleHTTPFallback = "LifecycleHTTPFallback"
)

// ContainerRef is the object events about a container are recorded on: the
// pod, with fieldPath spec.containers{name} (or spec.initContainers{name}).
func ContainerRef(pod *v1.Pod, containerName string) *v1.ObjectReference {
	path := fmt.Sprintf("spec.containers{%s}", containerName)
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == containerName {
			path = fmt.Sprintf("spec.initContainers{%s}", containerName)
			break
		}
	}
	return &v1.ObjectReference{
		Kind:       "Pod",
		APIVersion: "v1",
		Namespace:  pod.Namespace,
		Name:       pod.Name,
		UID:        pod.UID,
		FieldPath:  path,
	}
}

// KillGracePeriod is the grace period, in seconds, to kill a container with
// after its liveness or startup probe failed (t), as the kubelet computes it:
// the pod's deletion grace period if it is being deleted, else the probe's
// terminationGracePeriodSeconds if set, else the pod's
// terminationGracePeriodSeconds, else 2.
func KillGracePeriod(pod *v1.Pod, container *v1.Container, t ProbeType) int64 {
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		return 2
	}
	if t == Liveness || t == Startup {
		if p := t.spec(container); p != nil && p.TerminationGracePeriodSeconds != nil {
			return *p.TerminationGracePeriodSeconds
		}
	}
	return *pod.Spec.TerminationGracePeriodSeconds
}

// FormatPod renders a pod as the kubelet does in messages: name_namespace(uid).
func FormatPod(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
