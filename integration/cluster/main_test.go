// Package cluster drives `berth server` as a whole control plane, run as a
// process: the apiserver with the controller manager and the scheduler
// inside it. Clients are real kubectl (harness.KubectlRelease) and client-go.
// Nodes are only Node objects whose status and Leases the tests write (no
// agent); where pods must become ready the tests write their status.
package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"berth/integration/harness"
)

// shared is the package's server, started by TestMain.
var shared *serverProc

func TestMain(m *testing.M) {
	os.Exit(harness.RunWithServer(m, "cluster", func(dir string) (*harness.Server, error) {
		var err error
		if shared, err = startServer(filepath.Join(dir, "server"), "--listen", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		return shared.Server, nil
	}))
}

// serverProc is a running `berth server`.
type serverProc struct{ *harness.Server }

// startServer runs `berth server --data-dir dir args...` and waits for it
// to write its address.
func startServer(dir string, args ...string) (*serverProc, error) {
	s, err := harness.LaunchServer(dir, args...)
	if err != nil {
		return nil, err
	}
	return &serverProc{s}, nil
}

// startTestServer is startServer for one test, stopped at its end.
func startTestServer(t *testing.T, args ...string) *serverProc {
	t.Helper()
	p, err := startServer(filepath.Join(t.TempDir(), "server"), append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("server %s log:\n%s", p.Dir, p.Log())
		}
	})
	return p
}

// stop sends SIGTERM and waits (SIGKILL after 30s); it reports whether the
// server stopped on SIGTERM.
func (p *serverProc) stop() bool {
	if p == nil {
		return true
	}
	return p.Stop()
}

// identity is the server's identity in the Leases, from its log.
func (p *serverProc) identity(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(p.Log(), "\n") {
		if !strings.Contains(line, "berth server serving") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "identity="); ok {
				return strings.Trim(id, `"`)
			}
		}
	}
	t.Fatalf("no identity in the server log:\n%s", p.Log())
	return ""
}

// kubectl runs kubectl against the server: stdout, stderr and the error.
func (p *serverProc) kubectl(t testing.TB, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return p.kubectlTool(t).Run(stdin, args...)
}

// mustKubectl is kubectl that fails the test on error.
func (p *serverProc) mustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	return p.kubectlTool(t).MustRun(t, stdin, args...)
}

func (p *serverProc) kubectlTool(t testing.TB) harness.Kubectl {
	return harness.Kubectl{Bin: harness.RequireKubectl(t), Args: []string{"--kubeconfig", p.Kubeconfig()},
		Env: []string{"KUBECACHEDIR=" + filepath.Join(p.Dir, "kubecache")}}
}
