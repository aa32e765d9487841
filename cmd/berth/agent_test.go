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
		{[]string{"--kubeconfig", "/k", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x", "--eviction-hard", "memory.free<1Gi"}, "--eviction-hard"},
		{[]string{"--kubeconfig", "/k", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x", "--eviction-soft", "memory.available<1Gi"}, "--eviction-soft-grace-period"},
		{[]string{"--kubeconfig", "/k", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x", "--register-with-taints", "a=b:Sometimes"}, "--register-with-taints"},
		{[]string{"--kubeconfig", "/k", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x", "--config", "testdata/kubelet-unknown-field.yaml"}, `unknown field "evictionHardd"`},
		// The file is applied (its port is checked as the flag's would be).
		{[]string{"--kubeconfig", "/k", "--container-runtime-endpoint", "unix:///x.sock", "--root-dir", "/tmp/x", "--config", "testdata/kubelet-bad-port.yaml"}, "--kubelet-port"},
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
