// Package scheduler tests berth's scheduler end to end: for each test a
// real `berth server` process (embedded etcd) and a `berth scheduler
// --kubeconfig` process against it. Nodes are only Node objects (no
// agent); pods are created with client-go and the tests assert where they
// are bound (pods/binding), the FailedScheduling events and PodScheduled
// conditions carrying kube-scheduler's messages, and the scheduler's metrics.
package scheduler

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
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

// berthBin is the binary under test, set by TestMain.
var berthBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "berth-scheduler-it-")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if berthBin, err = berthBinary(tmp); err != nil {
		fmt.Println("scheduler integration:", err)
		return 1
	}
	return m.Run()
}

// berthBinary is $BERTH_BIN, else ./cmd/berth built once into dir.
func berthBinary(dir string) (string, error) {
	if b := os.Getenv("BERTH_BIN"); b != "" {
		return b, nil
	}
	out := filepath.Join(dir, "berth")
	if b, err := exec.Command("go", "build", "-o", out, "berth/cmd/berth").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/berth: %v\n%s", err, b)
	}
	return out, nil
}

// cluster is one test's server and scheduler.
type cluster struct {
	client      kubernetes.Interface
	kubeconfig  string
	metricsAddr string
}

// process runs a berth subcommand, logging to a file shown when the test
// fails, stopped (SIGTERM, then SIGKILL after 20s) at cleanup or when the
// returned stop function is called (idempotent).
func process(t testing.TB, logName string, args ...string) (stop func()) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), logName)
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(berthBin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start berth %s: %v", args[0], err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(func() {
		stop()
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("--- berth %s log (%s, tail) ---\n%s", args[0], logName, b)
		}
	})
	return stop
}

// serverDisablesScheduler reports whether `berth server` has a --disable
// flag (once it runs the scheduler inside, these tests run it apart).
func serverDisablesScheduler() bool {
	out, _ := exec.Command(berthBin, "server", "--help").CombinedOutput()
	return bytes.Contains(out, []byte("--disable"))
}

// startCluster starts a server and a scheduler for t (short back-off so
// retries are quick) and returns a client.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	c := startServer(t)
	c.startScheduler(t)
	return c
}

// startServer starts a server for t and returns a client of it (no
// scheduler yet).
func startServer(t testing.TB) *cluster {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "server")
	args := []string{"server", "--data-dir", dataDir, "--listen", "127.0.0.1:0"}
	if serverDisablesScheduler() {
		args = append(args, "--disable", "scheduler")
	}
	process(t, "server.log", args...)
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dataDir, "listen-address")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("berth server wrote no listen-address within 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("berth server not ready within 60s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &cluster{client: client, kubeconfig: kubeconfig}
}

// startScheduler runs `berth scheduler` against the cluster's server.
func (c *cluster) startScheduler(t testing.TB) {
	t.Helper()
	c.metricsAddr = freeAddr(t)
	process(t, "scheduler.log", "scheduler", "--kubeconfig", c.kubeconfig, "--metrics-address", c.metricsAddr,
		"--pod-initial-backoff", "100ms", "--pod-max-backoff", "500ms", "--log-level", "debug")
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// metrics returns the scheduler's /metrics text.
func (c *cluster) metrics(t testing.TB) string {
	t.Helper()
	body, err := httpGet("http://" + c.metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("scrape scheduler metrics: %v", err)
	}
	return body
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}
