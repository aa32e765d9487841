package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/backoff"
	"berth/agent/containerconfig"
	"berth/agent/images"
	"berth/agent/podruntime"
	"berth/agent/podworker"
	"berth/agent/qos"
	"berth/agent/sandboxconfig"
	"berth/agent/status"
	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
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
	ctx, cancel := context.WithCancel(context.Background())
	puller, err := images.NewPuller(images.Config{Images: n.cri})
	if err != nil {
		t.Fatal(err)
	}
	statuses := status.NewManager()
	m, err := podworker.New(podworker.Config{
		CRI: n.cri, Reader: podruntime.New(n.cri), Status: statuses, BackOff: backoff.New(backoff.Policy{Initial: time.Second, Max: time.Second, ResetAfter: time.Minute}),
		Images:           puller,
		SandboxOptions:   sandboxconfig.Options{PodLogDir: n.logs, CgroupRoot: n.cgroupRoot},
		ContainerOptions: containerconfig.Options{NodeName: "n1", MemoryCapacity: 1 << 30},
		RootDir:          n.root, HostIP: "127.0.0.1", QOSClass: qos.Class, Resync: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	pod, err := scheme.DecodePod([]byte(podManifest(n.env, "target", "  hostNetwork: true\n", "app=exec sleep 12345")))
	if err != nil {
		t.Fatal(err)
	}
	pod.Namespace, pod.UID = "default", types.UID(fmt.Sprintf("ephemeral-%d", time.Now().UnixNano()))
	defaults.Pod(pod)
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
