package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxSubject names a sandbox config in errors: namespace/name.
func sandboxSubject(cfg *runtimeapi.PodSandboxConfig) string {
	if md := cfg.GetMetadata(); md != nil {
		return md.GetNamespace() + "/" + md.GetName()
	}
	return ""
}

// RunPodSandbox creates and starts a pod sandbox and returns its ID.
// runtimeHandler selects the runtime class ("" for the default).
func (c *Client) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: runtimeHandler})
	if err != nil {
		return "", translate("RunPodSandbox", sandboxSubject(cfg), err)
	}
	return resp.GetPodSandboxId(), nil
}

// StopPodSandbox stops the sandbox and its containers. A sandbox already gone
// counts as stopped (nil).
func (c *Client) StopPodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return ignoreNotFound(translate("StopPodSandbox", id, err))
}

// RemovePodSandbox removes a stopped sandbox and its containers. A sandbox
// already gone counts as removed (nil).
func (c *Client) RemovePodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	return ignoreNotFound(translate("RemovePodSandbox", id, err))
}

// PodSandboxStatus returns the sandbox's status; an unknown ID gives an error
// wrapping errdefs.ErrNotFound.
func (c *Client) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose})
	if err != nil {
		return nil, translate("PodSandboxStatus", id, err)
	}
	return resp, nil
}

// ListPodSandbox lists the sandboxes matching filter (nil: all).
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, translate("ListPodSandbox", "", err)
	}
	return resp.GetItems(), nil
}

// PodSandboxStats returns the resource usage of one sandbox.
func (c *Client) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id})
	if err != nil {
		return nil, translate("PodSandboxStats", id, err)
	}
	return resp.GetStats(), nil
}

// ListPodSandboxStats returns the resource usage of the sandboxes matching filter (nil: all).
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	if err != nil {
		return nil, translate("ListPodSandboxStats", "", err)
	}
	return resp.GetStats(), nil
}
