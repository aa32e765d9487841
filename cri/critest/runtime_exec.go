package critest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runningContainer finds a running container, or answers as containerd does.
func (s *Server) runningContainer(id string) (*container, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.getContainer(id)
	if err != nil {
		return nil, err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, errf(codes.Unknown, "container is in %s state", stateName(c.state))
	}
	return c, nil
}

func (r *runtimeService) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	s := r.s
	if len(req.GetCmd()) == 0 {
		return nil, errf(codes.InvalidArgument, "cmd must not be empty")
	}
	if _, err := s.runningContainer(req.GetContainerId()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	h := s.exec
	s.mu.Unlock()
	if t := req.GetTimeout(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	stdout, stderr, code, err := h(ctx, req.GetContainerId(), req.GetCmd())
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, errf(codes.DeadlineExceeded, "timeout %v exceeded: %v", time.Duration(req.GetTimeout())*time.Second, ctx.Err())
		}
		return nil, errf(codes.Unknown, "failed to exec in container: %v", err)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout, Stderr: stderr, ExitCode: code}, nil
}

// streamURL is the URL a streaming call answers; the fake serves no streams.
func streamURL(kind, id string) string {
	return fmt.Sprintf("http://127.0.0.1:10010/%s/%s", kind, id[:min(len(id), 12)])
}

func (r *runtimeService) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if len(req.GetCmd()) == 0 {
		return nil, errf(codes.InvalidArgument, "cmd must not be empty")
	}
	if !req.GetStdin() && !req.GetStdout() && !req.GetStderr() {
		return nil, errf(codes.InvalidArgument, "one of stdin, stdout, or stderr must be set")
	}
	if _, err := r.s.runningContainer(req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.ExecResponse{Url: streamURL("exec", newID())}, nil
}

func (r *runtimeService) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if !req.GetStdin() && !req.GetStdout() && !req.GetStderr() {
		return nil, errf(codes.InvalidArgument, "one of stdin, stdout, or stderr must be set")
	}
	if _, err := r.s.runningContainer(req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.AttachResponse{Url: streamURL("attach", newID())}, nil
}

func (r *runtimeService) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, err := s.getSandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, errf(codes.FailedPrecondition, "sandbox %q is not running", sb.id)
	}
	return &runtimeapi.PortForwardResponse{Url: streamURL("portforward", newID())}, nil
}
