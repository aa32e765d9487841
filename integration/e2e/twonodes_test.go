package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

// TestTwoAgentsSpreadDeployment runs two agents on this machine, each on
// its own containerd and bridge, joined to one server that gives each node
// half of the second environment's pod CIDR; a Deployment with a
// topology spread over kubernetes.io/hostname lands on both nodes, each pod
// with an IP from its own node's podCIDR.
func TestTwoAgentsSpreadDeployment(t *testing.T) {
	harness.RequireKubectl(t)
	env1 := nodeenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env2, err := nodeenv.Start(ctx, nodeenv.Options{SkipCNIConfig: true})
	if err != nil {
		t.Fatalf("second containerd: %v", err)
	}
	t.Cleanup(func() {
		if err := env2.Stop(); err != nil {
			t.Errorf("stop the second containerd: %v", err)
		}
	})
	// The Deployment names one image, served by env1's registry; env2's
	// containerd only knows its own registry, so the image is put there
	// beforehand (the pods pull IfNotPresent, as with images present).
	var out bytes.Buffer
	pull := exec.CommandContext(ctx, "ctr", "--address", strings.TrimPrefix(env2.Endpoint, "unix://"), "--namespace", "k8s.io",
		"images", "pull", "--plain-http", env1.BusyboxImage)
	pull.Stdout, pull.Stderr = &out, &out
	if err := pull.Run(); err != nil {
		t.Fatalf("ctr pull %s into the second containerd: %v\n%s", env1.BusyboxImage, err, out.String())
	}

	// The nodes share env2's pod CIDR (its slot is this test's alone), a
	// half each. env1's bridge keeps the address of the package's other
	// tests, which the bridge plugin refuses to change, so node a gets a
	// bridge of its own, named after env2's unique one and removed here.
	prefix := netip.MustParsePrefix(env2.PodCIDR)
	c := harness.StartServer(t, harness.ServerOptions{ClusterCIDR: env2.PodCIDR, MaskBits: prefix.Bits() + 1})
	bridgeA := env2.BridgeName + "a"
	t.Cleanup(func() {
		link, err := netlink.LinkByName(bridgeA)
		if err != nil {
			return // never created
		}
		if err := netlink.LinkDel(link); err != nil {
			t.Errorf("delete bridge %s: %v", bridgeA, err)
		}
	})
	nodes := map[string]*nodeenv.Env{"e2e-node-a": env1, "e2e-node-b": env2}
	bridges := map[string]string{"e2e-node-a": bridgeA, "e2e-node-b": env2.BridgeName}
	dir := t.TempDir()
	for name, env := range nodes {
		c.StartAgent(t, env, name, filepath.Join(dir, name), "/berth-e2e-"+name, "--cni-bridge", bridges[name])
	}
	podCIDRs := map[string]netip.Prefix{}
	for name := range nodes {
		harness.WaitFor(t, 90*time.Second, "node "+name+" Ready with a podCIDR", func() (bool, string) {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cond := range n.Status.Conditions {
				if cond.Type == v1.NodeReady && cond.Status == v1.ConditionTrue && n.Spec.PodCIDR != "" {
					podCIDRs[name] = netip.MustParsePrefix(n.Spec.PodCIDR)
					return true, ""
				}
			}
			return false, fmt.Sprintf("podCIDR=%q conditions=%+v", n.Spec.PodCIDR, n.Status.Conditions)
		})
	}
	if podCIDRs["e2e-node-a"].Overlaps(podCIDRs["e2e-node-b"]) {
		t.Fatalf("the nodes' podCIDRs overlap: %v", podCIDRs)
	}

	c.MustKubectl(t, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: spread
spec:
  replicas: 4
  selector:
    matchLabels: {app: spread}
  template:
    metadata:
      labels: {app: spread}
    spec:
      terminationGracePeriodSeconds: 1
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        labelSelector:
          matchLabels: {app: spread}
      containers:
      - name: main
        image: %s
        imagePullPolicy: IfNotPresent
        command: ["sleep", "3600"]
`, env1.BusyboxImage), "apply", "-f", "-")
	t.Cleanup(func() {
		c.Kubectl(t, "", "delete", "deployment", "spread", "--wait=true", "--timeout=60s")
		harness.WaitFor(t, 60*time.Second, "the Deployment's pods gone", func() (bool, string) {
			pods, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=spread"})
			if err != nil {
				return false, err.Error()
			}
			return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items))
		})
	})

	perNode := map[string]int{}
	harness.WaitFor(t, 90*time.Second, "4 spread pods Running", func() (bool, string) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=spread"})
		if err != nil {
			return false, err.Error()
		}
		perNode = map[string]int{}
		var states []string
		running := 0
		for _, p := range pods.Items {
			states = append(states, fmt.Sprintf("%s@%s:%s/%s", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP))
			if p.Status.Phase != v1.PodRunning || p.Status.PodIP == "" {
				continue
			}
			running++
			perNode[p.Spec.NodeName]++
			cidr, ok := podCIDRs[p.Spec.NodeName]
			if !ok {
				t.Fatalf("pod %s on unknown node %q", p.Name, p.Spec.NodeName)
			}
			if ip := netip.MustParseAddr(p.Status.PodIP); !cidr.Contains(ip) {
				t.Fatalf("pod %s on %s has IP %s outside its node's podCIDR %s", p.Name, p.Spec.NodeName, ip, cidr)
			}
		}
		return running == 4, strings.Join(states, " ")
	})
	if perNode["e2e-node-a"] != 2 || perNode["e2e-node-b"] != 2 {
		t.Fatalf("pods per node %v, want 2 on each (maxSkew 1)", perNode)
	}
}
