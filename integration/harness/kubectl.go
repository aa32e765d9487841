package harness

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"berth/internal/syncbuf"
)

// Kubectl is how a test runs real kubectl: the binary, the arguments every
// call starts with (a kubeconfig, or a server and a credential), and the
// environment it adds (a discovery cache dir, ...).
type Kubectl struct {
	Bin  string
	Args []string
	Env  []string
	// Timeout bounds each Run; zero is 90 s.
	Timeout time.Duration
}

// Command is a kubectl command for the caller to start and stream
// (kubectl logs -f, port-forward).
func (k Kubectl) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.Bin, append(append([]string(nil), k.Args...), args...)...)
	cmd.Env = append(os.Environ(), k.Env...)
	return cmd
}

// Run runs kubectl with stdin (none when empty): stdout, stderr, the error.
func (k Kubectl) Run(stdin string, args ...string) (string, string, error) {
	timeout := k.Timeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := k.Command(ctx, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// Stream starts kubectl for the rest of the test (stopped when it ends, or
// after timeout): its stdout as lines, and its stderr as written so far.
func (k Kubectl) Stream(tb testing.TB, timeout time.Duration, args ...string) (*bufio.Scanner, *syncbuf.Buffer) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := k.Command(ctx, args...)
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		cancel()
		tb.Fatalf("kubectl %v: %v", args, err)
	}
	tb.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return bufio.NewScanner(stdout), stderr
}

// MustRun is Run failing the test on error; it returns stdout.
func (k Kubectl) MustRun(tb testing.TB, stdin string, args ...string) string {
	tb.Helper()
	out, errOut, err := k.Run(stdin, args...)
	if err != nil {
		tb.Fatalf("kubectl %v: %v\nstdout: %s\nstderr: %s", args, err, out, errOut)
	}
	return out
}
