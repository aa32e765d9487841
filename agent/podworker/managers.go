package podworker

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/images"
	"berth/agent/volumes"
	"berth/probes"
)

// The managers a worker uses, as the few calls it makes of each.

// ImagePuller makes a container's image present, with its pull policy and
// back-off (agent/images.Puller).
type ImagePuller interface {
	EnsureImage(ctx context.Context, req images.Request) (images.Result, error)
}

// Volumes sets up and tears down pods' volumes (agent/volumes.Manager):
// SetUp is idempotent and, failing, RetryAt says when its back-off lets the
// next attempt through; TearDown never deletes across a mount.
type Volumes interface {
	SetUp(ctx context.Context, pod *v1.Pod) (*volumes.Mounts, error)
	RetryAt(uid types.UID) time.Time
	TearDown(ctx context.Context, uid types.UID) error
}

// Prober runs the containers' probes (probes.Manager): the manager runs it
// (Run), forwards its result changes (Updates) to the pods' workers, adds
// each synced pod, reads liveness and startup results, lets it decide
// started and ready in status, and stops and removes a pod's probes.
type Prober interface {
	Run(ctx context.Context) error
	Updates() <-chan probes.Update
	AddPod(pod *v1.Pod)
	Result(containerID string, t probes.ProbeType) (probes.Result, bool)
	UpdatePodStatus(pod *v1.Pod, st *v1.PodStatus)
	StopLivenessAndStartup(pod *v1.Pod)
	RemovePod(pod *v1.Pod)
}

// LifecycleHooks runs postStart and preStop handlers (probes.HookRunner).
type LifecycleHooks interface {
	Run(ctx context.Context, pod *v1.Pod, t probes.Target, handler *v1.LifecycleHandler) (string, error)
}

var (
	_ ImagePuller    = (*images.Puller)(nil)
	_ Volumes        = (*volumes.Manager)(nil)
	_ Prober         = (*probes.Manager)(nil)
	_ LifecycleHooks = (*probes.HookRunner)(nil)
)
