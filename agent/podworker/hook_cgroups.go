package podworker

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cgroupsHook removes the pod's cgroups (Config.PodCleanup: agent/cgroups
// under the node's cgroup root) once its containers are gone.
type cgroupsHook struct {
	remove func(uid types.UID, pod *v1.Pod) error
}

var _ TeardownHook = (*cgroupsHook)(nil)

func (h *cgroupsHook) Teardown(_ context.Context, pod podRef) error {
	return h.remove(pod.UID, pod.Pod)
}
