package errdefs

import (
	"context"

	"google.golang.org/grpc/codes"
)

// FromGRPCCode returns the error classes a gRPC status code belongs to, for
// the clients of gRPC peers (CRI, CSI) to unwrap to. Codes with no class
// (Unknown, Internal, DataLoss, ResourceExhausted) return nil: the peer's
// message is then all there is to say.
func FromGRPCCode(code codes.Code) []error {
	switch code {
	case codes.NotFound:
		return []error{ErrNotFound}
	case codes.AlreadyExists:
		return []error{ErrAlreadyExists}
	case codes.InvalidArgument, codes.OutOfRange:
		return []error{ErrInvalidArgument}
	case codes.FailedPrecondition, codes.Aborted:
		return []error{ErrConflict}
	case codes.Unavailable:
		return []error{ErrUnavailable}
	case codes.DeadlineExceeded:
		return []error{ErrDeadlineExceeded, context.DeadlineExceeded}
	case codes.Canceled:
		return []error{context.Canceled}
	case codes.Unauthenticated:
		return []error{ErrUnauthenticated}
	case codes.PermissionDenied:
		return []error{ErrPermissionDenied}
	case codes.Unimplemented:
		return []error{ErrUnimplemented}
	}
	return nil
}
