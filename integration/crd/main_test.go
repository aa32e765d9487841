// Package crd_test drives CustomResourceDefinitions through `berth server`
// with kubectl and client-go, as a user installing an operator would: a
// CRD with two versions and a conversion webhook (a small HTTPS server in
// the test), custom objects validated, defaulted and pruned, CEL rules,
// printer columns, kubectl explain, status and scale subresources, a
// watch, and deleting the CRD removing its objects.
package crd_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth/integration/harness"
	"berth/internal/prereq"
)

// shared is the package's server, started by TestMain: the API alone
// (the CRD controllers run in the apiserver, not the controller manager).
var shared *harness.Server

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	defer harness.RemoveBinary()
	dir, err := os.MkdirTemp("", "berth-crd-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	shared, err = harness.LaunchServer(filepath.Join(dir, "server"), "--listen", "127.0.0.1:0",
		"--disable", "controllers,scheduler", "--disable-admission-plugins", "ServiceAccount")
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting berth server:", err)
		return 1
	}
	defer shared.Stop()
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, shared.LogTail())
	}
	return code
}

// kubectl runs kubectl 1.32 against the server.
func kubectl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	bin := prereq.Kubectl(t, "1.32")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", shared.Kubeconfig()}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(shared.Dir, "kubecache-"+strings.ReplaceAll(t.Name(), "/", "_")))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// mustKubectl is kubectl failing the test on error.
func mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\nstdout: %s\nstderr: %s", args, err, out, errOut)
	}
	return out
}
