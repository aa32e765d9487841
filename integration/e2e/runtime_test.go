package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

// TestNodeNotReadyWhileTheRuntimeIsStopped stops the node's container
// runtime entirely — a containerd of this test's own, its process ended and
// its state removed — and expects the Node's Ready condition to turn False
// with the kubelet's reason and a message naming the runtime, the agent
// still running; then a containerd is started again on the agent's
// endpoint and the Node is Ready again. The agent's endpoint is a symlink
// to the running containerd's socket, so that the new containerd (nodeenv
// gives each its own directory) answers on the same path.
func TestNodeNotReadyWhileTheRuntimeIsStopped(t *testing.T) {
	harness.RequireKubectl(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	first, err := nodeenv.Start(ctx, nodeenv.Options{})
	if err != nil {
		t.Fatalf("containerd for the test: %v", err)
	}
	t.Cleanup(func() {
		if err := first.Stop(); err != nil {
			t.Errorf("stop the first containerd: %v", err)
		}
	})
	dir := t.TempDir()
	endpoint := filepath.Join(dir, "runtime.sock")
	pointAt := func(env *nodeenv.Env) {
		t.Helper()
		tmp := endpoint + ".new"
		if err := os.Symlink(strings.TrimPrefix(env.Endpoint, "unix://"), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, endpoint); err != nil {
			t.Fatal(err)
		}
	}
	pointAt(first)

	// The node's pod CIDR is the test containerd's own; no pod runs.
	prefix := netip.MustParsePrefix(first.PodCIDR)
	c := harness.StartServer(t, harness.ServerOptions{ClusterCIDR: first.PodCIDR, MaskBits: prefix.Bits()})
	c.Node = "e2e-runtime-node"
	node := &nodeenv.Env{Endpoint: "unix://" + endpoint, CNIConfDir: filepath.Join(dir, "net.d"), CNIBinDirs: first.CNIBinDirs,
		BridgeName: first.BridgeName, PodCIDR: first.PodCIDR}
	if err := os.MkdirAll(node.CNIConfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	agent, _ := c.StartAgent(t, node, c.Node, filepath.Join(dir, "agent"), "/berth-e2e-runtime")
	if n := waitReadyCondition(t, c, v1.ConditionTrue, 90*time.Second); n.Reason != "KubeletReady" {
		t.Fatalf("Ready condition reason %q, want KubeletReady", n.Reason)
	}

	if err := first.Stop(); err != nil {
		t.Fatalf("stop containerd: %v", err)
	}
	// The agent gives the runtime 30 s (the kubelet's
	// maxWaitForContainerRuntime), then reports at its next status update.
	n := waitReadyCondition(t, c, v1.ConditionFalse, 2*time.Minute)
	if n.Reason != "KubeletNotReady" || !strings.Contains(n.Message, "container runtime is down") {
		t.Fatalf("NotReady condition reason %q message %q, want KubeletNotReady and \"container runtime is down\"", n.Reason, n.Message)
	}
	if agent.Exited() {
		t.Fatalf("the agent exited when the runtime stopped:\n%s", agent.Log())
	}

	second, err := nodeenv.Start(ctx, nodeenv.Options{})
	if err != nil {
		t.Fatalf("restart containerd: %v", err)
	}
	t.Cleanup(func() {
		if err := second.Stop(); err != nil {
			t.Errorf("stop the second containerd: %v", err)
		}
	})
	pointAt(second)
	// The runtime client reconnects with gRPC's back-off, then the next
	// status update reports Ready.
	if n := waitReadyCondition(t, c, v1.ConditionTrue, 3*time.Minute); n.Reason != "KubeletReady" {
		t.Fatalf("Ready condition reason %q after the runtime came back, want KubeletReady", n.Reason)
	}
	if agent.Exited() {
		t.Fatalf("the agent exited:\n%s", agent.Log())
	}
}

// waitReadyCondition waits up to timeout for the cluster's Node to have its
// Ready condition at status, and returns that condition.
func waitReadyCondition(t *testing.T, c *harness.Cluster, status v1.ConditionStatus, timeout time.Duration) v1.NodeCondition {
	t.Helper()
	var got v1.NodeCondition
	harness.WaitFor(t, timeout, "node "+c.Node+" Ready="+string(status), func() (bool, string) {
		n, err := c.Client.CoreV1().Nodes().Get(context.Background(), c.Node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady {
				got = cond
				return cond.Status == status, fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
			}
		}
		return false, "no Ready condition"
	})
	return got
}
