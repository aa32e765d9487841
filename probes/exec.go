package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"berth/internal/errdefs"
)

// Execer runs a command in a container through the runtime and waits for it:
// CRI ExecSync. *cri.Client satisfies it. A non-zero exit code is not an
// error; a command that outlives timeout comes back as an error of class
// errdefs.ErrDeadlineExceeded (or context.DeadlineExceeded).
type Execer interface {
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
}

// ExecProbe runs cmd in the container with the probe's timeout. Exit code 0
// is Success, any other a Failure; the message is stdout then stderr (at most
// 10 KiB). A command that timed out is a Failure `command "<cmd>" timed out`;
// any other runtime error is Unknown with the error, as the kubelet does.
func ExecProbe(ctx context.Context, r Execer, containerID string, cmd []string, timeout time.Duration) (Result, string, error) {
	stdout, stderr, code, err := r.ExecSync(ctx, containerID, cmd, timeout)
	if err != nil {
		if isTimeout(err) {
			return Failure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
		}
		return Unknown, "", fmt.Errorf("exec probe in container %s: %w", containerID, err)
	}
	out := combinedOutput(stdout, stderr)
	if code != 0 {
		return Failure, out, nil
	}
	return Success, out, nil
}

// isTimeout reports whether a runtime error means the command ran out of time.
func isTimeout(err error) bool {
	return errors.Is(err, errdefs.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}

// combinedOutput is stdout then stderr, cut at 10 KiB.
func combinedOutput(stdout, stderr []byte) string {
	n := len(stdout) + len(stderr)
	if n > maxOutputLength {
		n = maxOutputLength
	}
	b := make([]byte, 0, n)
	b = append(b, stdout[:min(len(stdout), n)]...)
	b = append(b, stderr[:min(len(stderr), n-len(b))]...)
	return string(b)
}
