package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"berth/internal/errdefs"
)

// Bad flags stop `berth agent` before it touches anything, naming the flag.
func TestAgentCommandRejectsBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x", "--pod-cidr", "10.1.0.0/24"}, "--pod-manifest-path"},
		{[]string{"--pod-manifest-path", "/tmp/m", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x", "--pod-cidr", "10.1.0.7/24"}, "--pod-cidr"},
		{[]string{"--pod-manifest-path", "/tmp/m", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x", "--pod-cidr", "10.1.0.0/24", "--read-only-port", "-1"}, "--read-only-port"},
		{[]string{"--pod-manifest-path", "/tmp/m", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x", "--pod-cidr", "10.1.0.0/24", "--log-level", "loud"}, "--log-level"},
		{[]string{"--server", "https://127.0.0.1:6443", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x"}, "--token-file"},
		{[]string{"--server", "127.0.0.1:6443", "--token-file", "/t", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x"}, "--server"},
		{[]string{"--kubeconfig", "/k", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x", "--tls-cert-file", "/c"}, "--tls-cert-file"},
	}
	for _, tc := range tests {
		cmd := newAgentCommand()
		cmd.SetArgs(tc.args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("berth agent %v = %v, want an error naming %s", tc.args, err, tc.want)
		}
		if tc.want != "--log-level" && !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("berth agent %v = %v, want ErrInvalidArgument", tc.args, err)
		}
	}
}

// As upstream's KubeletConfiguration: no read-only port unless asked for.
func TestReadOnlyPortIsOffByDefault(t *testing.T) {
	for name, f := range map[string]*cobra.Command{"agent": newAgentCommand(), "up": newUpCommand()} {
		if d := f.Flags().Lookup("read-only-port").DefValue; d != "0" {
			t.Errorf("berth %s --read-only-port defaults to %s, want 0", name, d)
		}
	}
}
