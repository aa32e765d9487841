package probes

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"berth/internal/version"
)

// slowHealth answers Check only when the call ends.
type slowHealth struct {
	healthpb.UnimplementedHealthServer
}

func (slowHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// serveGRPC serves srv on a loopback port and returns the port.
func serveGRPC(t *testing.T, srv *grpc.Server) int {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().(*net.TCPAddr).Port
}

func TestGRPCProbe(t *testing.T) {
	var userAgent atomic.Value
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	withHealth := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			userAgent.Store(strings.Join(md.Get("user-agent"), ","))
		}
		return h(ctx, req)
	}))
	healthpb.RegisterHealthServer(withHealth, hs)
	healthPort := serveGRPC(t, withHealth)
	bare := serveGRPC(t, grpc.NewServer())
	slow := grpc.NewServer()
	healthpb.RegisterHealthServer(slow, slowHealth{})
	slowPort := serveGRPC(t, slow)
	gone, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := gone.Addr().(*net.TCPAddr).Port
	gone.Close()

	tests := []struct {
		name    string
		port    int
		service string
		timeout time.Duration
		want    Result
		wantOut string
	}{
		{"SERVING is success", healthPort, "", time.Second, Success, "service healthy"},
		{"NOT_SERVING is failure", healthPort, "db", time.Second, Failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service is failure", healthPort, "nope", time.Second, Failure, "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		{"no health service", bare, "", time.Second, Failure, "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{"slow answer times out", slowPort, "", 300 * time.Millisecond, Failure, "timeout: health rpc did not complete within 300ms"},
		{"nothing listening times out connecting", closedPort, "", 300 * time.Millisecond, Failure, `timeout: failed to connect service "127.0.0.1:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, out, err := GRPCProbe(context.Background(), "127.0.0.1", tt.port, tt.service, tt.timeout)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if res != tt.want || !strings.HasPrefix(out, tt.wantOut) {
				t.Errorf("got %q %q, want %q starting %q", res, out, tt.want, tt.wantOut)
			}
		})
	}
	if ua, _ := userAgent.Load().(string); !strings.HasPrefix(ua, "kube-probe/"+version.KubernetesMinor()) {
		t.Errorf("user-agent = %q, want kube-probe/%s first", ua, version.KubernetesMinor())
	}
}
