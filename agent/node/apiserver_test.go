package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The package's `berth server`, started by the first test that needs it
// and stopped by TestMain.
var apiserver struct {
	once    sync.Once
	err     error
	tmp     string
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
	client  kubernetes.Interface
}

func TestMain(m *testing.M) {
	code := m.Run()
	if apiserver.cmd != nil {
		_ = apiserver.cmd.Process.Signal(os.Interrupt)
		select {
		case <-apiserver.exited:
		case <-time.After(20 * time.Second):
			_ = apiserver.cmd.Process.Kill()
			<-apiserver.exited
		}
	}
	if code != 0 && apiserver.logPath != "" {
		if b, err := os.ReadFile(apiserver.logPath); err == nil {
			if len(b) > 10000 {
				b = b[len(b)-10000:]
			}
			fmt.Printf("--- berth server log (tail) ---\n%s\n", b)
		}
	}
	if apiserver.tmp != "" {
		os.RemoveAll(apiserver.tmp)
	}
	os.Exit(code)
}

// apiClient is an admin client of a real `berth server` (embedded etcd) on
// 127.0.0.1: $BERTH_BIN, else ./cmd/berth built once.
func apiClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	apiserver.once.Do(func() { apiserver.err = startAPIServer() })
	if apiserver.err != nil {
		t.Fatalf("berth server: %v", apiserver.err)
	}
	return apiserver.client
}

func startAPIServer() error {
	tmp, err := os.MkdirTemp("", "berth-node-test-")
	if err != nil {
		return err
	}
	apiserver.tmp = tmp
	bin := os.Getenv("BERTH_BIN")
	if bin == "" {
		bin = filepath.Join(tmp, "berth")
		build := exec.Command("go", "build", "-o", bin, "berth/cmd/berth")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/berth: %v\n%s", err, out)
		}
	}
	dataDir := filepath.Join(tmp, "server")
	apiserver.logPath = filepath.Join(tmp, "server.log")
	logFile, err := os.Create(apiserver.logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// The apiserver alone: the node controllers (IPAM, lifecycle) would
	// change the Nodes these tests write and check.
	cmd := exec.Command(bin, "server", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--disable", "controllers,scheduler")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	apiserver.cmd, apiserver.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(apiserver.exited) }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dataDir, "listen-address")); err == nil {
			break
		}
		select {
		case <-apiserver.exited:
			return fmt.Errorf("exited before serving (log %s)", apiserver.logPath)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("wrote no listen-address within 90s")
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within 90s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	apiserver.client = client
	return nil
}
