package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUpCommandRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	badRegistries := filepath.Join(dir, "registries.yaml")
	if err := os.WriteFile(badRegistries, []byte("mirrors:\n  docker.io:\n    endpoint: [\"ftp://x\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--pod-cidr", "10.42.0.1"}, "--pod-cidr"},
		{[]string{"--pod-cidr", "10.42.0.0/31"}, "--pod-cidr"},
		{[]string{"--kubelet-port", "70000"}, "--kubelet-port"},
		{[]string{"--cni-bridge", "a-name-longer-than-fifteen"}, "--cni-bridge"},
		{[]string{"--registries", badRegistries}, `mirrors["docker.io"].endpoint[0]`},
		{[]string{"--registries", filepath.Join(dir, "missing.yaml")}, "--registries"},
		{[]string{"--log-level", "loud"}, "--log-level"},
	}
	for _, tt := range tests {
		cmd := newRootCommand()
		var out, errOut bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"up", "--data-dir", filepath.Join(dir, "data"), "--cni-bin-dir", "/usr/lib/cni"}, tt.args...))
		err := cmd.Execute()
		if err == nil {
			t.Errorf("berth up %v succeeded, want an error", tt.args)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("berth up %v: error %q does not name %s", tt.args, err, tt.want)
		}
		if strings.Contains(out.String(), "cluster ready") {
			t.Errorf("berth up %v claimed a ready cluster", tt.args)
		}
	}
}
