package podworker

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
)

// Runtime is the CRI calls a pod worker makes to act on its pod (berth/cri's
// Client; the pods' state comes from the runtime cache, not from here). The
// calls classify errors with internal/errdefs, as cri.Client does; removing
// or stopping what is gone is not an error.
type Runtime interface {
	RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	StopPodSandbox(ctx context.Context, id string) error
	RemovePodSandbox(ctx context.Context, id string) error
	CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
	RemoveContainer(ctx context.Context, id string) error
	// ImageStatus reads an image's configured user (runAsNonRoot checks).
	ImageStatus(ctx context.Context, image string) (*runtimeapi.Image, error)
}

var _ Runtime = (*cri.Client)(nil)
