package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PodReady reports the pod's Ready condition.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// FindPort resolves a Service port's target port on pod, as upstream: a
// name is the (init or regular) container port of that name and the
// Service port's protocol (false when the pod has none), a number is
// itself, none is the Service port.
func FindPort(pod *corev1.Pod, sp corev1.ServicePort) (int32, bool) {
	switch {
	case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
		for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal && cp.Protocol == sp.Protocol {
					return cp.ContainerPort, true
				}
			}
		}
		return 0, false
	case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal, true
	}
	return sp.Port, true
}
