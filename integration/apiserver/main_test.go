// Package apiserver_test drives `berth server` as a process, with real
// kubectl (1.27 to 1.34, built by hack/kubectl) and client-go as its
// clients.
package apiserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"berth/integration/harness"
	"berth/internal/prereq"
)

// apiOnly are the flags of a server running the apiserver alone. Without
// the controllers no namespace gets its "default" service account, so the
// ServiceAccount admission plugin (which would refuse every pod) is off, as
// in upstream's apiserver-only integration tests.
var apiOnly = []string{"--disable", "controllers,scheduler", "--disable-admission-plugins", "ServiceAccount"}

// shared is the package's server, started by TestMain.
var shared *serverProc

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithServer(m, "apiserver", func(dir string) (*harness.Server, error) {
		// The API alone: no controller or scheduler writes into the objects
		// these tests examine (integration/cluster tests the whole).
		var err error
		if shared, err = startServer(filepath.Join(dir, "server"), "127.0.0.1:0", apiOnly...); err != nil {
			return nil, err
		}
		return shared.Server, nil
	}))
}

// serverProc is a running `berth server`.
type serverProc struct{ *harness.Server }

// startServer runs `berth server --data-dir dir --listen listen extra...`
// and waits for it to write its address.
func startServer(dir, listen string, extra ...string) (*serverProc, error) {
	s, err := harness.LaunchServer(dir, append([]string{"--listen", listen}, extra...)...)
	if err != nil {
		return nil, err
	}
	return &serverProc{s}, nil
}

// stop sends SIGTERM and waits (SIGKILL after 30s).
func (p *serverProc) stop() {
	if p != nil {
		p.Stop()
	}
}

// kubectl runs kubectl of a version against the server; it returns
// stdout, stderr and the error.
func (p *serverProc) kubectl(t testing.TB, version string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return p.kubectlEnv(t, version, nil, stdin, args...)
}

// kubectlEnv is kubectl with extra environment variables (KUBE_EDITOR, ...).
func (p *serverProc) kubectlEnv(t testing.TB, version string, env []string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return harness.Kubectl{Bin: requireKubectl(t, version), Args: []string{"--kubeconfig", p.Kubeconfig()},
		Env: append([]string{"KUBECACHEDIR=" + filepath.Join(p.Dir, "kubecache-"+version)}, env...), Timeout: 60 * time.Second}.Run(stdin, args...)
}

// mustKubectl is kubectl that fails the test on error.
func (p *serverProc) mustKubectl(t testing.TB, version, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := p.kubectl(t, version, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s %v: %v\nstdout: %s\nstderr: %s", version, args, err, out, errOut)
	}
	return out
}

// requireKubectl returns the kubectl binary of a release (hack/kubectl
// builds it). Missing: the test fails under CI=true, else it is skipped.
func requireKubectl(t testing.TB, release string) string {
	t.Helper()
	return prereq.Kubectl(t, release)
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T, p *serverProc) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", ".", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	p.mustKubectl(t, "1.32", "", "create", "namespace", name)
	t.Cleanup(func() { _, _, _ = p.kubectl(t, "1.32", "", "delete", "namespace", name, "--wait=false") })
	return name
}
