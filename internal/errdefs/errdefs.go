// Package errdefs is berth's one error vocabulary: a few sentinel classes that
// every layer wraps with %w and every caller tests with errors.Is.
package errdefs

import "errors"

// The error classes. Wrap them with fmt.Errorf("...: %w", errdefs.ErrNotFound).
var (
	// ErrNotFound: the object does not exist (or no longer does).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: an object with that identity exists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrInvalidArgument: the caller's input is malformed or not allowed.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrConflict: the object changed since the caller read it.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: the peer cannot be reached or is not ready; retrying may help.
	ErrUnavailable = errors.New("unavailable")
	// ErrDeadlineExceeded: the operation ran out of time.
	ErrDeadlineExceeded = errors.New("deadline exceeded")
	// ErrUnauthenticated: the peer refused the caller's credentials.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied: the caller is known but not allowed.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnimplemented: the peer does not support the operation or protocol.
	ErrUnimplemented = errors.New("unimplemented")
)

// IsNotFound reports whether err is of class ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
