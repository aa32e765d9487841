// Package eviction drives node-pressure eviction end to end: `berth
// server` and `berth agent --server` as processes on a real containerd,
// the agent's root directory (its node filesystem, where emptyDir volumes
// and logs live) on a 64 MiB tmpfs, so the disk signal is the test's alone
// and deterministic. A BestEffort pod filling an emptyDir past the
// configured nodefs.available threshold is evicted — Failed, reason
// Evicted, the kubelet's message, DisruptionTarget, an Evicted event — the
// node reports DiskPressure and is tainted disk-pressure:NoSchedule
// meanwhile, while a pod within its ephemeral-storage request keeps
// running; once the evicted pod's volume is gone the pressure, and the
// taint, go after the transition period.
package eviction

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"berth/integration/harness"
	"berth/integration/nodeenv"
)

func TestMain(m *testing.M) { harness.Main(m, nodeenv.Options{SkipCNIConfig: true}) }

const pods = `apiVersion: v1
kind: Pod
metadata: {name: filler, namespace: default}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 30
  containers:
  - name: fill
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "head -c 41943040 /dev/zero > /data/fill; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
---
apiVersion: v1
kind: Pod
metadata: {name: steady, namespace: default}
spec:
  automountServiceAccountToken: false
  containers:
  - name: sleep
    image: %[1]s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    resources:
      requests: {cpu: 10m, memory: 16Mi, ephemeral-storage: 8Mi}
      limits: {cpu: 10m, memory: 16Mi, ephemeral-storage: 8Mi}
`

// startNode runs a server and an agent for node on root, sampling every
// second, with the hard eviction threshold evictionHard and a 15 s
// pressure transition period.
func startNode(t *testing.T, node, root, evictionHard string) *harness.Cluster {
	env := nodeenv.Current()
	c := harness.StartServer(t, harness.ServerOptions{})
	c.Env, c.Node, c.AgentRootDir = env, node, root
	c.Agent, c.KubeletPort = c.StartAgent(t, env, c.Node, root, "/berth-"+env.BridgeName,
		"--housekeeping-interval", "1s", "--node-status-update-frequency", "1s",
		"--eviction-hard", evictionHard, "--eviction-pressure-transition-period", "15s")
	return c
}

// tmpfsDir mounts a tmpfs of size bytes on a new directory, unmounted when
// the test ends (after everything registered later, the agent included).
func tmpfsDir(t *testing.T, size int) string {
	dir := filepath.Join(t.TempDir(), "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("mounting a tmpfs for the agent's root: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

func condition(n *v1.Node, t v1.NodeConditionType) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func hasTaint(n *v1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == v1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

func TestDiskPressureEvictsTheBestEffortPod(t *testing.T) {
	env := nodeenv.Current()
	// 40 % of 64 MiB: the filler's 40 MiB crosses it, nothing else does.
	c := startNode(t, "eviction-node", tmpfsDir(t, 64<<20), "nodefs.available<40%")
	ctx := context.Background()
	c.MustKubectl(t, fmt.Sprintf(pods, env.BusyboxImage), "apply", "-f", "-")
	// Deleted before the agent stops, so their volumes are gone from the tmpfs.
	t.Cleanup(func() {
		c.MustKubectl(t, "", "delete", "pod", "filler", "steady", "--grace-period=1", "--wait=true", "--timeout=90s")
	})

	var filler *v1.Pod
	c.WaitPod(t, "filler", 120*time.Second, "the filler to be evicted", func(p *v1.Pod) (bool, string) {
		filler = p
		return p.Status.Phase == v1.PodFailed, fmt.Sprintf("%s %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})
	const prefix = "The node was low on resource: ephemeral-storage. Threshold quantity: "
	if filler.Status.Reason != "Evicted" || !strings.HasPrefix(filler.Status.Message, prefix) {
		t.Errorf("filler: reason %q, message %q; want Evicted, %q...", filler.Status.Reason, filler.Status.Message, prefix)
	}
	var target *v1.PodCondition
	for i := range filler.Status.Conditions {
		if filler.Status.Conditions[i].Type == v1.DisruptionTarget {
			target = &filler.Status.Conditions[i]
		}
	}
	if target == nil || target.Status != v1.ConditionTrue || target.Reason != v1.PodReasonTerminationByKubelet || target.Message != filler.Status.Message {
		t.Errorf("filler's DisruptionTarget condition: %+v", target)
	}
	for _, cs := range filler.Status.ContainerStatuses {
		if cs.State.Terminated == nil {
			t.Errorf("evicted filler's container %s is not terminated: %+v", cs.Name, cs.State)
		}
	}

	t.Run("an Evicted event for the pod and EvictionThresholdMet for the node", func(t *testing.T) {
		harness.WaitFor(t, 30*time.Second, "the events", func() (bool, string) {
			pod, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.Set{"involvedObject.name": "filler", "reason": "Evicted"}.String()})
			if err != nil {
				return false, err.Error()
			}
			node, err := c.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: fields.Set{"involvedObject.name": c.Node, "reason": "EvictionThresholdMet"}.String()})
			if err != nil {
				return false, err.Error()
			}
			ok := len(pod.Items) > 0 && pod.Items[0].Type == v1.EventTypeWarning && strings.HasPrefix(pod.Items[0].Message, prefix) &&
				len(node.Items) > 0 && node.Items[0].Message == "Attempting to reclaim ephemeral-storage"
			return ok, fmt.Sprintf("pod events %d, node events %d", len(pod.Items), len(node.Items))
		})
	})

	t.Run("the node under DiskPressure is tainted, then neither once reclaimed", func(t *testing.T) {
		// The pressure lasts the transition period (15 s) after the
		// eviction freed the emptyDir.
		harness.WaitFor(t, 30*time.Second, "DiskPressure and its taint", func() (bool, string) {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, c.Node, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return condition(n, v1.NodeDiskPressure) == v1.ConditionTrue && hasTaint(n, v1.TaintNodeDiskPressure),
				fmt.Sprintf("DiskPressure %s, taints %v", condition(n, v1.NodeDiskPressure), n.Spec.Taints)
		})
		harness.WaitFor(t, 60*time.Second, "DiskPressure False and the taint gone", func() (bool, string) {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, c.Node, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return condition(n, v1.NodeDiskPressure) == v1.ConditionFalse && !hasTaint(n, v1.TaintNodeDiskPressure),
				fmt.Sprintf("DiskPressure %s, taints %v", condition(n, v1.NodeDiskPressure), n.Spec.Taints)
		})
	})

	t.Run("the pod within its requests keeps running", func(t *testing.T) {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "steady", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != v1.PodRunning {
			t.Errorf("steady: %s %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
	})
}
