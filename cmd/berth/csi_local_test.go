package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCSILocalFlagErrors: bad provisioning flags fail before anything is
// served, naming the flag.
func TestCSILocalFlagErrors(t *testing.T) {
	dir := t.TempDir()
	base := []string{"csi-local", "--endpoint", "unix://" + filepath.Join(dir, "csi.sock"), "--root-dir", filepath.Join(dir, "root"), "--node-id", "n1"}
	missing := filepath.Join(dir, "no-such.kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--provisioner"}, "--provisioner: needs --kubeconfig"},
		{[]string{"--kubeconfig", missing}, "--kubeconfig"},
	} {
		cmd := newRootCommand()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append(base, tc.args...))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("berth %v: err = %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "root")); err == nil {
		t.Error("the driver started (made its root dir) although its flags were bad")
	}
}
