// Package scheduler tests berth's scheduler end to end: for each test a
// real `berth server` process (embedded etcd) and a `berth scheduler
// --kubeconfig` process against it. Nodes are only Node objects (no
// agent); pods are created with client-go and the tests assert where they
// are bound (pods/binding), the FailedScheduling events and PodScheduled
// conditions carrying kube-scheduler's messages, and the scheduler's metrics.
package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"berth/integration/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.RemoveBinary()
	os.Exit(code)
}

// cluster is one test's server and scheduler.
type cluster struct {
	client      kubernetes.Interface
	kubeconfig  string
	metricsAddr string
}

// process runs a berth subcommand, stopped (SIGTERM, then SIGKILL after
// 30s) at cleanup or when the returned stop function is called.
func process(t testing.TB, name string, args ...string) (stop func()) {
	t.Helper()
	p := harness.Start(t, name, args...)
	return func() { p.Stop() }
}

// startCluster starts a server and a scheduler for t (short back-off so
// retries are quick) and returns a client.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	c := startServer(t)
	c.startScheduler(t)
	return c
}

// startServer starts a server without its own scheduler for t and returns
// a client of it.
func startServer(t testing.TB) *cluster {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "server")
	srv := harness.Start(t, "berth server", "server", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--disable", "scheduler")
	if _, err := srv.ListenAddress(dataDir, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 60*time.Second, "berth server ready", func() (bool, string) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil && strings.TrimSpace(string(body)) == "ok", fmt.Sprint(string(body), err)
	})
	return &cluster{client: client, kubeconfig: kubeconfig}
}

// startScheduler runs `berth scheduler` against the cluster's server.
func (c *cluster) startScheduler(t testing.TB) {
	t.Helper()
	c.metricsAddr = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	process(t, "berth scheduler", "scheduler", "--kubeconfig", c.kubeconfig, "--metrics-address", c.metricsAddr,
		"--pod-initial-backoff", "100ms", "--pod-max-backoff", "500ms", "--log-level", "debug")
}

// metrics returns the scheduler's /metrics text.
func (c *cluster) metrics(t testing.TB) string {
	t.Helper()
	body, err := harness.HTTPGet("http://" + c.metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("scrape scheduler metrics: %v", err)
	}
	return body
}
