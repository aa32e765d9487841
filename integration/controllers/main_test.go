// Package controllers tests berth's controllers end to end: a real
// `berth server` process (etcd embedded, its own controllers and scheduler
// disabled) with the test's controller manager running against it through
// client-go, exactly as it runs inside the server. Nodes are only Node
// objects and Leases (no agent); where a test needs pods to become ready
// it plays the agent's part by writing pod status through the API.
package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"berth/controlplane/controller/garbagecollector"
	"berth/controlplane/controller/manager"
	"berth/controlplane/controller/nodeipam"
	"berth/controlplane/controller/nodelifecycle"
	"berth/integration/harness"
	"berth/internal/syncbuf"
)

// Short timeouts so node failure is seen within seconds.
const (
	testGracePeriod   = 3 * time.Second
	testMonitorPeriod = 500 * time.Millisecond
	testClusterCIDR   = "10.99.0.0/24"
	testNodeMask      = 26 // four node subnets
)

// env is the package's server and manager.
var env struct {
	dataDir    string
	kubeconfig string
	restConfig *rest.Config
	client     kubernetes.Interface
	dynamic    dynamic.Interface
	manager    *manager.Manager
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "berth-controllers-")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(tmp)
	defer harness.RemoveBinary()
	env.dataDir = filepath.Join(tmp, "server")
	// The tests run their own manager (short node timeouts, a test cluster
	// CIDR); the server's would compete for the same Lease.
	srv, err := harness.Launch("berth server", "server", "--data-dir", env.dataDir, "--listen", "127.0.0.1:0", "--disable", "controllers,scheduler")
	if err != nil {
		fmt.Println("controllers integration:", err)
		return 1
	}
	defer srv.Stop()
	if err := waitServer(srv); err != nil {
		fmt.Printf("berth server did not come up: %v\n", err)
		return 1
	}
	managerLog := &syncbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	mgrDone := make(chan error, 1)
	mgrClient, mgrDynamic, err := manager.ClientsFor(env.restConfig)
	if err != nil {
		fmt.Println(err)
		cancel()
		return 1
	}
	env.manager, err = manager.New(manager.Config{
		Client:           mgrClient,
		Dynamic:          mgrDynamic,
		Identity:         "integration",
		NodeIPAM:         nodeipam.Options{ClusterCIDR: testClusterCIDR, NodeCIDRMaskSize: testNodeMask},
		NodeLifecycle:    nodelifecycle.Options{GracePeriod: testGracePeriod, StartupGracePeriod: testGracePeriod, MonitorPeriod: testMonitorPeriod},
		GarbageCollector: garbagecollector.Options{DiscoveryPeriod: 5 * time.Second},
		Logger:           slog.New(slog.NewTextHandler(managerLog, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		fmt.Println(err)
		cancel()
		return 1
	}
	go func() { mgrDone <- env.manager.Run(ctx) }()
	code := m.Run()
	cancel()
	if err := <-mgrDone; err != nil {
		fmt.Println("manager:", err)
		code = 1
	}
	if code != 0 {
		for name, logs := range map[string]string{"server": srv.Log(), "manager": managerLog.String()} {
			if len(logs) > 20000 {
				logs = logs[len(logs)-20000:]
			}
			fmt.Printf("--- %s log (tail) ---\n%s\n", name, logs)
		}
	}
	return code
}

// waitServer waits until the server serves and is ready, and sets up the
// package's clients.
func waitServer(srv *harness.Proc) error {
	if _, err := srv.ListenAddress(env.dataDir, 60*time.Second); err != nil {
		return err
	}
	env.kubeconfig = filepath.Join(env.dataDir, "admin.kubeconfig")
	deadline := time.Now().Add(60 * time.Second)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		return err
	}
	env.restConfig = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 500, 1000 // the tests' own client
	if env.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if env.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	for time.Now().Before(deadline) {
		body, err := env.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("not ready within 60s")
}
