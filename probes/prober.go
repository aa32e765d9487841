package probes

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/internal/errdefs"
)

// Target is the container a probe or hook acts on.
type Target struct {
	// PodIP is the host of httpGet, tcpSocket and grpc actions that name none.
	PodIP string
	// Container is the container's spec: named ports, env for $(VAR) in exec commands.
	Container *v1.Container
	// ContainerID is the runtime's container ID, with or without the
	// "<runtime>://" prefix the pod status carries.
	ContainerID string
}

// runtimeID strips the "<runtime>://" prefix of a status container ID.
func runtimeID(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+3:]
	}
	return id
}

// Prober runs the action of a v1.Probe: exec, httpGet, tcpSocket or grpc.
// It is safe for concurrent use.
type Prober struct {
	exec Execer
	http *HTTPGetter
}

// NewProber returns a Prober running exec actions through r and HTTP
// actions through g (a new HTTPGetter if nil).
func NewProber(r Execer, g *HTTPGetter) *Prober {
	if g == nil {
		g = NewHTTPGetter()
	}
	return &Prober{exec: r, http: g}
}

// probeTimeout is timeoutSeconds, 1s when unset (the API's default).
func probeTimeout(p *v1.Probe) time.Duration {
	if p.TimeoutSeconds <= 0 {
		return time.Second
	}
	return time.Duration(p.TimeoutSeconds) * time.Second
}

// Probe runs p's action once against t and returns its result and message.
// An error means the probe could not be run at all (bad port, no handler,
// runtime error) and comes with Unknown.
func (pr *Prober) Probe(ctx context.Context, p *v1.Probe, t Target) (Result, string, error) {
	timeout := probeTimeout(p)
	switch {
	case p.Exec != nil:
		if pr.exec == nil {
			return Unknown, "", fmt.Errorf("exec probe: no runtime to exec in: %w", errdefs.ErrUnavailable)
		}
		var env []v1.EnvVar
		if t.Container != nil {
			env = t.Container.Env
		}
		return ExecProbe(ctx, pr.exec, runtimeID(t.ContainerID), expandCommand(p.Exec.Command, env), timeout)
	case p.HTTPGet != nil:
		req, err := NewHTTPRequest(p.HTTPGet, t.Container, t.PodIP, PurposeProbe)
		if err != nil {
			return Unknown, "", err
		}
		return pr.http.Probe(ctx, req, timeout)
	case p.TCPSocket != nil:
		port, err := ResolvePort(p.TCPSocket.Port, t.Container)
		if err != nil {
			return Unknown, "", fmt.Errorf("tcpSocket: %w", err)
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		if host == "" {
			return Unknown, "", fmt.Errorf("tcpSocket: no host and the pod has no IP yet: %w", errdefs.ErrUnavailable)
		}
		return TCPProbe(ctx, host, port, timeout)
	case p.GRPC != nil:
		if t.PodIP == "" {
			return Unknown, "", fmt.Errorf("grpc: the pod has no IP yet: %w", errdefs.ErrUnavailable)
		}
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return GRPCProbe(ctx, t.PodIP, int(p.GRPC.Port), service, timeout)
	}
	name := ""
	if t.Container != nil {
		name = t.Container.Name
	}
	return Unknown, "", fmt.Errorf("missing probe handler for container %q: %w", name, errdefs.ErrInvalidArgument)
}
