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
	"os/exec"
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
	bin, err := berthBinary(tmp)
	if err != nil {
		fmt.Println("controllers integration:", err)
		return 1
	}
	env.dataDir = filepath.Join(tmp, "server")
	logFile, err := os.Create(filepath.Join(tmp, "server.log"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	args := []string{"server", "--data-dir", env.dataDir, "--listen", "127.0.0.1:0"}
	if help, _ := exec.Command(bin, "server", "--help").CombinedOutput(); strings.Contains(string(help), "--disable") {
		// The tests run their own manager (short node timeouts, a test
		// cluster CIDR); the server's would compete for the same Lease.
		args = append(args, "--disable", "controllers,scheduler")
	}
	srv := exec.Command(bin, args...)
	srv.Stdout, srv.Stderr = logFile, logFile
	if err := srv.Start(); err != nil {
		fmt.Println("start berth server:", err)
		return 1
	}
	defer func() {
		_ = srv.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = srv.Process.Kill()
			<-done
		}
	}()
	if err := waitServer(); err != nil {
		logs, _ := os.ReadFile(logFile.Name())
		fmt.Printf("berth server did not come up: %v\n%s\n", err, logs)
		return 1
	}
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
		Logger:           slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})),
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
		logs, _ := os.ReadFile(logFile.Name())
		if len(logs) > 20000 {
			logs = logs[len(logs)-20000:]
		}
		fmt.Printf("--- server and manager log (tail) ---\n%s\n", logs)
	}
	return code
}

// berthBinary is $BERTH_BIN, else ./cmd/berth built once into dir.
func berthBinary(dir string) (string, error) {
	if b := os.Getenv("BERTH_BIN"); b != "" {
		return b, nil
	}
	out := filepath.Join(dir, "berth")
	cmd := exec.Command("go", "build", "-o", out, "berth/cmd/berth")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/berth: %v\n%s", err, b)
	}
	return out, nil
}

func waitServer() error {
	env.kubeconfig = filepath.Join(env.dataDir, "admin.kubeconfig")
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(env.dataDir, "listen-address")); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
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
