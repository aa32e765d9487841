package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version asks the runtime for its name and versions again (New already did once).
func (c *Client) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.Version(ctx, &runtimeapi.VersionRequest{})
	return resp, translate("Version", "", err)
}

// Status returns the runtime's conditions (RuntimeReady, NetworkReady) and,
// when verbose, its extra info.
func (c *Client) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
	return resp, translate("Status", "", err)
}

// UpdateRuntimeConfig tells the runtime the node's pod CIDR.
func (c *Client) UpdateRuntimeConfig(ctx context.Context, podCIDR string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.runtime.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{
		RuntimeConfig: &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: podCIDR}},
	})
	return translate("UpdateRuntimeConfig", podCIDR, err)
}
