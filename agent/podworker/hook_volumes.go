package podworker

import (
	"context"
)

// volumesHook tears the pod's volumes down (agent/volumes unmounts and
// removes them, never deleting across a mount). Their set-up is a step of
// execute: it yields the mounts the containers are created with and
// retries on the volume manager's back-off.
type volumesHook struct{ vols Volumes }

var _ TeardownHook = (*volumesHook)(nil)

func (h *volumesHook) Teardown(ctx context.Context, pod podRef) error {
	return h.vols.TearDown(ctx, pod.UID)
}
