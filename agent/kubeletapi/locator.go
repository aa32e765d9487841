package kubeletapi

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/internal/errdefs"
)

// LocatorRuntime is the part of the CRI client CRILocator uses; *cri.Client
// implements it.
type LocatorRuntime interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// CRILocator is a Locator reading the runtime itself: sandboxes and
// containers carry the kubelet's labels (io.kubernetes.pod.namespace,
// io.kubernetes.pod.name, io.kubernetes.pod.uid,
// io.kubernetes.container.name).
type CRILocator struct {
	Runtime LocatorRuntime
}

var _ Locator = CRILocator{}

// selector is the label selector for the pod's objects.
func (ref PodRef) selector() map[string]string {
	sel := map[string]string{cri.LabelPodNamespace: ref.Namespace, cri.LabelPodName: ref.Name}
	if ref.UID != "" {
		sel[cri.LabelPodUID] = ref.UID
	}
	return sel
}

// SandboxID returns the pod's ready sandbox (the newest, should there be
// more than one).
func (l CRILocator) SandboxID(ctx context.Context, ref PodRef) (string, error) {
	sandboxes, err := l.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: ref.selector(),
	})
	if err != nil {
		return "", fmt.Errorf("list sandboxes of pod %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	var best *runtimeapi.PodSandbox
	for _, sb := range sandboxes {
		if best == nil || sb.GetCreatedAt() > best.GetCreatedAt() {
			best = sb
		}
	}
	if best == nil {
		return "", fmt.Errorf("pod %s/%s has no ready sandbox: %w", ref.Namespace, ref.Name, errdefs.ErrNotFound)
	}
	return best.GetId(), nil
}

// ContainerID returns the pod's running container of that name (the newest
// attempt, should there be more than one).
func (l CRILocator) ContainerID(ctx context.Context, ref PodRef, container string) (string, error) {
	sel := ref.selector()
	sel[cri.LabelContainerName] = container
	containers, err := l.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: sel,
	})
	if err != nil {
		return "", fmt.Errorf("list containers of pod %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	var best *runtimeapi.Container
	for _, c := range containers {
		if best == nil || c.GetMetadata().GetAttempt() > best.GetMetadata().GetAttempt() {
			best = c
		}
	}
	if best == nil {
		return "", fmt.Errorf("container %q in pod %s/%s is not running: %w", container, ref.Namespace, ref.Name, errdefs.ErrNotFound)
	}
	return best.GetId(), nil
}
