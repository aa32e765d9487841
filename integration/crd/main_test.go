// Package crd_test drives CustomResourceDefinitions through `berth server`
// with kubectl and client-go, as a user installing an operator would: a
// CRD with two versions and a conversion webhook (a small HTTPS server in
// the test), custom objects validated, defaulted and pruned, CEL rules,
// printer columns, kubectl explain, status and scale subresources, a
// watch, and deleting the CRD removing its objects.
package crd_test

import (
	"os"
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
	os.Exit(harness.RunWithServer(m, "crd", func(dir string) (s *harness.Server, err error) {
		shared, err = harness.LaunchServer(filepath.Join(dir, "server"), "--listen", "127.0.0.1:0",
			"--disable", "controllers,scheduler", "--disable-admission-plugins", "ServiceAccount")
		return shared, err
	}))
}

// kubectl runs kubectl 1.32 against the server.
func kubectl(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return kubectlTool(t).Run(stdin, args...)
}

// mustKubectl is kubectl failing the test on error.
func mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	return kubectlTool(t).MustRun(t, stdin, args...)
}

func kubectlTool(t *testing.T) harness.Kubectl {
	return harness.Kubectl{Bin: prereq.Kubectl(t, "1.32"), Args: []string{"--kubeconfig", shared.Kubeconfig()},
		Env: []string{"KUBECACHEDIR=" + filepath.Join(shared.Dir, "kubecache-"+strings.ReplaceAll(t.Name(), "/", "_"))}, Timeout: 60 * time.Second}
}
