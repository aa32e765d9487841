package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// GRPCProbe calls grpc.health.v1.Health/Check for service on host:port over
// plain-text gRPC, all within timeout. SERVING is Success ("service
// healthy"); every other answer or error is a Failure whose message has the
// kubelet's shape: a connection not made in time is "timeout: failed to
// connect service ...", a server without the health service "error: this
// server does not implement the grpc health protocol ...", a slow answer
// "timeout: health rpc did not complete within ...", another status
// "service unhealthy (responded with \"NOT_SERVING\")".
func GRPCProbe(ctx context.Context, host string, port int, service string, timeout time.Duration) (Result, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	d := newDialer()
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(userAgent(PurposeProbe)),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", a)
		}),
	)
	if err != nil {
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer conn.Close()
	if err := waitReady(ctx, conn); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Failure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err), nil
		}
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if st, ok := status.FromError(err); ok {
			switch st.Code() {
			case codes.Unimplemented:
				return Failure, "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message(), nil
			case codes.DeadlineExceeded:
				return Failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
			}
		}
		return Failure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return Success, "service healthy", nil
}

// waitReady connects conn and waits until it is ready or ctx ends, retrying
// failed connections meanwhile (a blocking dial).
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if s == connectivity.Idle {
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}
