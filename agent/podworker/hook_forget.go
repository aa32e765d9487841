package podworker

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"berth/agent/backoff"
	"berth/agent/metrics"
	"berth/cri"
)

// backOffHook forgets the crash-loop back-off of the pod's containers.
type backOffHook struct{ tracker *backoff.Tracker }

var _ TeardownHook = (*backOffHook)(nil)

func (h *backOffHook) Teardown(_ context.Context, pod podRef) error {
	if pod.Pod == nil {
		return nil // an orphan: its containers' keys are unknown
	}
	for _, list := range [][]v1.Container{pod.Pod.Spec.InitContainers, pod.Pod.Spec.Containers} {
		for i := range list {
			h.tracker.Forget(backoff.Key(string(pod.UID), list[i].Name, cri.ContainerHash(&list[i])))
		}
	}
	return nil
}

// metricsHook forgets the pod's startup-latency tracking.
type metricsHook struct{ metrics *metrics.Metrics }

var _ TeardownHook = (*metricsHook)(nil)

func (h *metricsHook) Teardown(_ context.Context, pod podRef) error {
	h.metrics.ForgetPodStartup(pod.UID)
	return nil
}
