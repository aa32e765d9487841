// Package e2e drives the whole flow on one machine: `berth server` and
// `berth agent --server` as processes on a real containerd (nodeenv), real
// kubectl as the client: the node registers and is Ready, a pod applied
// without a node is scheduled, runs with an IP from the node's podCIDR,
// answers kubectl logs and exec through the apiserver, pulls with its pull
// secret, and leaves nothing in containerd once deleted.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"berth/integration/nodeenv"
	"berth/internal/prereq"
)

// kubectlBin is the kubectl the tests drive.
const kubectlBin = "/usr/bin/kubectl"

var (
	binOnce  sync.Once
	binPath  string
	binErr   error
	builtDir string
)

func TestMain(m *testing.M) {
	defer func() {
		if builtDir != "" {
			os.RemoveAll(builtDir)
		}
	}()
	nodeenv.Main(m, nodeenv.Options{SkipCNIConfig: true})
}

// berthBinary is $BERTH_BIN, or ./cmd/berth built once.
func berthBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if b := os.Getenv("BERTH_BIN"); b != "" {
			binPath = b
			return
		}
		dir, err := os.MkdirTemp("", "berth-e2e-bin-")
		if err != nil {
			binErr = err
			return
		}
		builtDir = dir
		binPath = filepath.Join(dir, "berth")
		cmd := exec.Command("go", "build", "-o", binPath, "berth/cmd/berth")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			binErr = fmt.Errorf("go build: %w: %s", err, out.String())
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// requireKubectl fails the test under CI=true when kubectl is missing,
// else skips it.
func requireKubectl(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(kubectlBin); err != nil {
		prereq.Missing(t, "kubectl not installed (%s)", kubectlBin)
	}
}

// syncBuffer is a bytes.Buffer safe for a process's two writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
