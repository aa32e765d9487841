package errdefs

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
)

func TestFromGRPCCode(t *testing.T) {
	tests := []struct {
		code codes.Code
		want []error
	}{
		{codes.NotFound, []error{ErrNotFound}},
		{codes.AlreadyExists, []error{ErrAlreadyExists}},
		{codes.InvalidArgument, []error{ErrInvalidArgument}},
		{codes.OutOfRange, []error{ErrInvalidArgument}},
		{codes.FailedPrecondition, []error{ErrConflict}},
		{codes.Aborted, []error{ErrConflict}},
		{codes.Unavailable, []error{ErrUnavailable}},
		{codes.DeadlineExceeded, []error{ErrDeadlineExceeded, context.DeadlineExceeded}},
		{codes.Canceled, []error{context.Canceled}},
		{codes.Unauthenticated, []error{ErrUnauthenticated}},
		{codes.PermissionDenied, []error{ErrPermissionDenied}},
		{codes.Unimplemented, []error{ErrUnimplemented}},
		{codes.Unknown, nil},
		{codes.Internal, nil},
		{codes.ResourceExhausted, nil},
	}
	for _, tt := range tests {
		got := FromGRPCCode(tt.code)
		if len(got) != len(tt.want) {
			t.Fatalf("FromGRPCCode(%v) = %v, want %v", tt.code, got, tt.want)
		}
		joined := errors.Join(got...)
		for _, w := range tt.want {
			if !errors.Is(joined, w) {
				t.Errorf("FromGRPCCode(%v) = %v, want it to include %v", tt.code, got, w)
			}
		}
	}
}
