package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecSync runs cmd in a running container and returns its output and exit
// code. A non-zero exit code is not an error. timeout (rounded up to whole
// seconds; 0 for none) is passed to the runtime, and the call is bounded by
// CallTimeout plus timeout.
func (c *Client) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout+timeout)
	defer cancel()
	resp, err := c.runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: seconds(timeout)})
	if err != nil {
		return nil, nil, 0, translate("ExecSync", id, err)
	}
	return resp.GetStdout(), resp.GetStderr(), resp.GetExitCode(), nil
}

// Exec asks the runtime for a streaming URL to exec in a container.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.Exec(ctx, req)
	if err != nil {
		return nil, translate("Exec", req.GetContainerId(), err)
	}
	return resp, nil
}

// Attach asks the runtime for a streaming URL to attach to a container.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.Attach(ctx, req)
	if err != nil {
		return nil, translate("Attach", req.GetContainerId(), err)
	}
	return resp, nil
}

// PortForward asks the runtime for a streaming URL to forward ports of a sandbox.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.runtime.PortForward(ctx, req)
	if err != nil {
		return nil, translate("PortForward", req.GetPodSandboxId(), err)
	}
	return resp, nil
}
