package cri_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"berth/cri"
	"berth/internal/errdefs"
)

// Config.UnaryInterceptors see every unary call, the handshake included,
// in order, outermost first, with the runtime's gRPC error before it is
// translated.
func TestUnaryInterceptorsWrapEveryCall(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	var codesSeen []codes.Code
	record := func(tag string) grpc.UnaryClientInterceptor {
		return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			mu.Lock()
			seen = append(seen, tag+method)
			mu.Unlock()
			err := invoker(ctx, method, req, reply, cc, opts...)
			if tag == "inner " {
				mu.Lock()
				codesSeen = append(codesSeen, status.Code(err))
				mu.Unlock()
			}
			return err
		}
	}
	srv, c := newClient(t, cri.Config{UnaryInterceptors: []grpc.UnaryClientInterceptor{record("outer "), record("inner ")}})
	srv.Inject("StopContainer", status.Error(codes.Unavailable, "runtime busy"))
	if err := c.StopContainer(testCtx(t), "abc", 0); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("StopContainer = %v, want ErrUnavailable", err)
	}
	want := []string{
		"outer /runtime.v1.RuntimeService/Version", "inner /runtime.v1.RuntimeService/Version",
		"outer /runtime.v1.RuntimeService/StopContainer", "inner /runtime.v1.RuntimeService/StopContainer",
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Errorf("interceptors saw %q, want %q", seen, want)
	}
	if !slices.Equal(codesSeen, []codes.Code{codes.OK, codes.Unavailable}) {
		t.Errorf("inner interceptor saw codes %v, want [OK Unavailable]", codesSeen)
	}
}
