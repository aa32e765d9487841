package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CreateContainer creates a container in the sandbox and returns its ID.
// sandboxCfg is the config the sandbox was run with.
func (c *Client) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandboxID, Config: cfg, SandboxConfig: sandboxCfg,
	})
	if err != nil {
		subject := sandboxID
		if name := cfg.GetMetadata().GetName(); name != "" {
			subject = sandboxID + "/" + name
		}
		return "", translate("CreateContainer", subject, err)
	}
	return resp.GetContainerId(), nil
}

// StartContainer starts a created container.
func (c *Client) StartContainer(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	return translate("StartContainer", id, err)
}

// StopContainer stops a container, killing it after timeout (rounded up to
// whole seconds; 0 kills at once). The call is bounded by CallTimeout plus
// timeout.
// A container already gone counts as stopped (nil).
func (c *Client) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	// The runtime waits up to timeout for the container: give the call that long on top.
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout+timeout)
	defer cancel()
	_, err := c.runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: seconds(timeout)})
	return ignoreNotFound(translate("StopContainer", id, err))
}

// RemoveContainer removes a container (the runtime kills it first if it still
// runs). A container already gone counts as removed (nil).
func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	return ignoreNotFound(translate("RemoveContainer", id, err))
}

// ListContainers lists the containers matching filter (nil: all).
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, translate("ListContainers", "", err)
	}
	return resp.GetContainers(), nil
}

// ContainerStatus returns a container's status; an unknown ID gives an error
// wrapping errdefs.ErrNotFound.
func (c *Client) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose})
	if err != nil {
		return nil, translate("ContainerStatus", id, err)
	}
	return resp, nil
}

// UpdateContainerResources changes a container's Linux resources in place.
func (c *Client) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.LinuxContainerResources) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.runtime.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: res})
	return translate("UpdateContainerResources", id, err)
}

// ReopenContainerLog asks the runtime to reopen a running container's log
// file (after the caller rotated it).
func (c *Client) ReopenContainerLog(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.runtime.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	return translate("ReopenContainerLog", id, err)
}

// ContainerStats returns the resource usage of one container.
func (c *Client) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil {
		return nil, translate("ContainerStats", id, err)
	}
	return resp.GetStats(), nil
}

// ListContainerStats returns the resource usage of the containers matching filter (nil: all).
func (c *Client) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	if err != nil {
		return nil, translate("ListContainerStats", "", err)
	}
	return resp.GetStats(), nil
}

// seconds rounds d up to whole seconds, the CRI's unit for timeouts, so that
// a short timeout is not turned into none (0).
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
