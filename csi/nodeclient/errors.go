package nodeclient

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"berth/internal/errdefs"
)

// Error is a failed CSI node call. It names the operation and its subject,
// keeps the driver's message verbatim, keeps the gRPC code (the CSI spec
// gives codes meanings per call, e.g. FailedPrecondition vs Aborted), and
// unwraps to the errdefs class of that code, so callers test it with
// errors.Is and never by string matching.
type Error struct {
	// Op is the CSI method, e.g. "NodeStageVolume".
	Op string
	// Driver is the CSI driver's name.
	Driver string
	// Subject is what the call was about (a volume handle); may be empty.
	Subject string
	// Code is the gRPC status code the driver answered with.
	Code codes.Code
	// Message is the driver's message, verbatim.
	Message string

	classes []error
}

// Error formats as `csi <driver> Op "subject": driver message: class`.
func (e *Error) Error() string {
	s := "csi " + e.Driver + " " + e.Op
	if e.Subject != "" {
		s += fmt.Sprintf(" %q", e.Subject)
	}
	s += ": " + e.Message
	if len(e.classes) > 0 {
		s += ": " + e.classes[0].Error()
	}
	return s
}

// Unwrap returns the error classes this error belongs to.
func (e *Error) Unwrap() []error { return e.classes }

// translate turns an error from the gRPC stubs into an *Error; the one place
// where gRPC codes become berth error classes.
func (c *Client) translate(op, subject string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		// Not a status: a context error from our side, or a dial failure.
		code := status.FromContextError(err).Code()
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			code = codes.Unavailable
		}
		return &Error{Op: op, Driver: c.cfg.Driver, Subject: subject, Code: code, Message: err.Error(), classes: errdefs.FromGRPCCode(code)}
	}
	return &Error{Op: op, Driver: c.cfg.Driver, Subject: subject, Code: st.Code(), Message: st.Message(), classes: errdefs.FromGRPCCode(st.Code())}
}
