// Package framework holds the types the scheduler's plugins and its cycle
// share: the node snapshot (NodeInfo, PodInfo, Snapshot), plugin interfaces,
// per-cycle state, filter statuses and the FitError that reports why a pod
// fits nowhere, worded as kube-scheduler words it.
package framework

import "strings"

// Code is the outcome class of a plugin call.
type Code int

// The codes, as upstream's framework defines them.
const (
	// Success: the node passes (a nil *Status means the same).
	Success Code = iota
	// Unschedulable: the node does not fit now, but could after cluster changes
	// (e.g. other pods go away).
	Unschedulable
	// UnschedulableAndUnresolvable: the node cannot fit the pod whatever
	// happens to other pods (selector, taint, name mismatch).
	UnschedulableAndUnresolvable
	// Error: the plugin failed internally.
	Error
	// Skip: from PreFilter/PreScore, the plugin has nothing to check for this
	// pod and its Filter/Score is not called.
	Skip
)

// String names the code.
func (c Code) String() string {
	switch c {
	case Success:
		return "Success"
	case Unschedulable:
		return "Unschedulable"
	case UnschedulableAndUnresolvable:
		return "UnschedulableAndUnresolvable"
	case Error:
		return "Error"
	case Skip:
		return "Skip"
	}
	return "Unknown"
}

// Status is a plugin's verdict with its reasons. A nil Status is Success.
type Status struct {
	code    Code
	reasons []string
	plugin  string
	err     error
}

// NewStatus returns a status with the code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps an internal error as an Error status.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the status code; Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Reasons returns the reasons, as counted in FitError messages.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Plugin returns the name of the plugin that produced the status.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the producing plugin and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// IsSuccess reports whether the status is Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsRejected reports whether the status rejects the node (either
// Unschedulable code).
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// AsError returns the status as an error for Error statuses, else nil.
func (s *Status) AsError() error {
	if s.Code() != Error {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return statusError(strings.Join(s.reasons, ", "))
}

// Message joins the reasons.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

type statusError string

func (e statusError) Error() string { return string(e) }
