package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// An ephemeral container added to a running pod (as `kubectl debug
// --target` does through pods/ephemeralcontainers) starts in the pod's
// sandbox on real containerd, sees its target's processes, is reported,
// and is stopped with the pod. Static pods cannot gain ephemeral
// containers, so the pod worker is driven here directly, as the agent's
// apiserver source does; the pod uses the host network (no agent writes a
// CNI config here).
func TestEphemeralContainerJoinsTarget(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	m, statuses := n.podWorkers(t, nil)

	pod := hostNetworkPod(t, n, "target", "app=exec sleep 12345")
	m.Update(pod)
	podStatus := func() v1.PodStatus { st, _ := statuses.Status(pod.UID); return st }
	eventually(t, time.Minute, "the pod running", func() (bool, string) {
		st := podStatus()
		return st.Phase == v1.PodRunning, fmt.Sprintf("%+v", st.ContainerStatuses)
	})
	appID := containerStatus(&v1.Pod{Status: podStatus()}, "app").ContainerID

	debug := pod.DeepCopy()
	debug.Spec.EphemeralContainers = []v1.EphemeralContainer{{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: n.env.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
			Command: []string{"sh", "-c", sleeper}, TerminationMessagePolicy: v1.TerminationMessageReadFile},
		TargetContainerName: "app",
	}}
	m.Update(debug)
	var dbgID string
	eventually(t, time.Minute, "the debugger running", func() (bool, string) {
		for _, cs := range podStatus().EphemeralContainerStatuses {
			if cs.Name == "debugger" && cs.State.Running != nil {
				dbgID = strings.TrimPrefix(cs.ContainerID, "containerd://")
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", podStatus().EphemeralContainerStatuses)
	})
	if id := containerStatus(&v1.Pod{Status: podStatus()}, "app").ContainerID; id != appID {
		t.Errorf("the app container was restarted (%s, was %s)", id, appID)
	}
	out, stderr, code, err := n.cri.ExecSync(ctx, dbgID, []string{"ps"}, 10*time.Second)
	if err != nil || code != 0 {
		t.Fatalf("ps in the debugger: exit %d, %v: %s", code, err, stderr)
	}
	if !strings.Contains(string(out), "sleep 12345") {
		t.Errorf("the debugger does not see its target's processes:\n%s", out)
	}

	m.Remove(pod.UID)
	eventually(t, time.Minute, "the pod and its debugger removed", func() (bool, string) {
		return len(n.containers(string(pod.UID))) == 0 && len(n.sandboxes(string(pod.UID))) == 0 && !m.Known(pod.UID), ""
	})
}
