package agent_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/integration/nodeenv"
)

// portPod is a host-network sleeper declaring host port port.
func portPod(env *nodeenv.Env, name string, port int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", %q]
    ports: [{containerPort: %d, hostPort: %d}]
`, name, env.BusyboxImage, sleeper, port, port)
}

// On a real containerd the node's admission rejects a pod wanting a host
// port a running pod holds — Failed, reason NodePorts and the kubelet's
// message, nothing of it in the runtime — and once the holder is removed
// the port is free for the next pod.
func TestHostPortConflictIsRejected(t *testing.T) {
	n := newNode(t)
	n.start()
	n.write("holder.yaml", portPod(n.env, "holder", 21017))
	n.waitPod("holder-n1", "Running", time.Minute, running)

	n.write("conflict.yaml", portPod(n.env, "conflict", 21017))
	p := n.waitPod("conflict-n1", "Failed", time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	const msg = "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
	if p.Status.Reason != "NodePorts" || p.Status.Message != msg {
		t.Errorf("rejected with %q %q, want NodePorts %q", p.Status.Reason, p.Status.Message, msg)
	}
	if sbs := n.sandboxes(string(p.UID)); len(sbs) != 0 {
		t.Errorf("the rejected pod has %d sandboxes", len(sbs))
	}

	n.remove("holder.yaml")
	eventually(t, time.Minute, "the holder gone", func() (bool, string) { return n.pod("holder-n1") == nil, "still in GET /pods" })
	n.write("successor.yaml", portPod(n.env, "successor", 21017))
	n.waitPod("successor-n1", "Running on the freed port", time.Minute, running)
	n.removeAllAndWait()
}
