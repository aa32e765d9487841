package cri_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"berth/cri"
	"berth/internal/errdefs"
)

var allClasses = []error{
	errdefs.ErrNotFound, errdefs.ErrAlreadyExists, errdefs.ErrInvalidArgument, errdefs.ErrConflict,
	errdefs.ErrUnavailable, errdefs.ErrDeadlineExceeded, errdefs.ErrUnauthenticated,
	errdefs.ErrPermissionDenied, errdefs.ErrUnimplemented,
}

// Each gRPC code the runtime answers with becomes exactly one errdefs class
// (or none), and the runtime's message is kept verbatim.
func TestErrorTranslation(t *testing.T) {
	srv, c := newClient(t, cri.Config{})
	ctx := testCtx(t)
	for _, tc := range []struct {
		code codes.Code
		want error // nil: no class
	}{
		{codes.NotFound, errdefs.ErrNotFound},
		{codes.AlreadyExists, errdefs.ErrAlreadyExists},
		{codes.InvalidArgument, errdefs.ErrInvalidArgument},
		{codes.OutOfRange, errdefs.ErrInvalidArgument},
		{codes.FailedPrecondition, errdefs.ErrConflict},
		{codes.Aborted, errdefs.ErrConflict},
		{codes.Unavailable, errdefs.ErrUnavailable},
		{codes.DeadlineExceeded, errdefs.ErrDeadlineExceeded},
		{codes.Unauthenticated, errdefs.ErrUnauthenticated},
		{codes.PermissionDenied, errdefs.ErrPermissionDenied},
		{codes.Unimplemented, errdefs.ErrUnimplemented},
		{codes.Unknown, nil},
		{codes.Internal, nil},
		{codes.ResourceExhausted, nil},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			msg := "runtime says: " + tc.code.String() + " happened"
			srv.InjectN("ContainerStatus", status.Error(tc.code, msg), 1)
			_, err := c.ContainerStatus(ctx, "abc123", false)
			if err == nil {
				t.Fatal("ContainerStatus succeeded despite the injected error")
			}
			for _, class := range allClasses {
				if got := errors.Is(err, class); got != (class == tc.want) {
					t.Errorf("errors.Is(%v, %v) = %v", err, class, got)
				}
			}
			if !strings.HasPrefix(err.Error(), `cri ContainerStatus "abc123": `+msg) {
				t.Errorf("error %q should start with the call, its subject and the runtime message", err)
			}
			var ce *cri.Error
			if !errors.As(err, &ce) || ce.Code != tc.code || ce.Message != msg || ce.Op != "ContainerStatus" {
				t.Errorf("errors.As(*cri.Error) = %+v, want code %v and the message verbatim", ce, tc.code)
			}
		})
	}
}

func TestCanceledContextIsContextCanceled(t *testing.T) {
	_, c := newClient(t, cri.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.ListPodSandbox(ctx, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ListPodSandbox with a canceled ctx = %v, want context.Canceled", err)
	}
}
