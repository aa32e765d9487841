package probes

// Result is the outcome of one probe action or the state a probe worker
// publishes. Actions return any of the four; workers publish Success,
// Failure or Unknown (a Warning counts as Success).
type Result string

// The results, with the kubelet's string values.
const (
	// Success: the check passed.
	Success Result = "success"
	// Warning: the check passed with something worth an event (an HTTP
	// redirect that was not followed).
	Warning Result = "warning"
	// Failure: the check failed.
	Failure Result = "failure"
	// Unknown: the check could not be run (e.g. the runtime errored), or a
	// startup probe has not concluded yet.
	Unknown Result = "unknown"
)

// maxOutputLength bounds the output an action keeps for its message, as the
// kubelet keeps at most 10 KiB of an exec probe's output or an HTTP body.
const maxOutputLength = 10 << 10
