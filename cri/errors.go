package cri

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"berth/internal/errdefs"
)

// Error is a failed CRI call. It names the operation and its subject, keeps
// the runtime's message verbatim, and unwraps to the errdefs class of the gRPC
// code (and to context.DeadlineExceeded / context.Canceled where that applies),
// so callers test it with errors.Is and never by string matching.
type Error struct {
	// Op is the CRI method, e.g. "PullImage".
	Op string
	// Subject is what the call was about (an image, a container ID); may be empty.
	Subject string
	// Code is the gRPC status code the runtime answered with.
	Code codes.Code
	// Message is the runtime's message, verbatim.
	Message string

	classes []error
}

// Error formats as `cri Op "subject": runtime message: class`.
func (e *Error) Error() string {
	s := "cri " + e.Op
	if e.Subject != "" {
		s += fmt.Sprintf(" %q", e.Subject)
	}
	s += ": " + e.Message
	if len(e.classes) > 0 && e.classes[0] != nil {
		s += ": " + e.classes[0].Error()
	}
	return s
}

// Unwrap returns the error classes this error belongs to.
func (e *Error) Unwrap() []error { return e.classes }

// translate turns an error returned by the gRPC stubs into an *Error. It is
// the one place where gRPC codes become berth error classes.
func translate(op, subject string, err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		// Not a status error: a context error raised before the call was made.
		code := status.FromContextError(err).Code()
		return &Error{Op: op, Subject: subject, Code: code, Message: err.Error(), classes: errdefs.FromGRPCCode(code)}
	}
	return &Error{Op: op, Subject: subject, Code: st.Code(), Message: st.Message(), classes: errdefs.FromGRPCCode(st.Code())}
}

// ignoreNotFound returns nil for errors of class ErrNotFound: stop and remove
// are done when the object is already gone.
func ignoreNotFound(err error) error {
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	return err
}
