package agent_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// openLog opens the log of the pod's named container as soon as it exists.
// The open file keeps its content readable after the agent deletes it with
// the pod.
func (n *node) openLog(uid, container string) *os.File {
	n.t.Helper()
	var f *os.File
	eventually(n.t, time.Minute, container+"'s log file", func() (bool, string) {
		for _, c := range n.containers(uid) {
			if c.GetMetadata().GetName() != container || c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
				continue
			}
			st, err := n.cri.ContainerStatus(context.Background(), c.GetId(), false)
			if err != nil {
				return false, err.Error()
			}
			if f, err = os.Open(st.GetStatus().GetLogPath()); err != nil {
				return false, err.Error()
			}
			return true, ""
		}
		return false, "not running yet"
	})
	n.t.Cleanup(func() { f.Close() })
	return f
}

// logUntil reads from f until it holds want.
func logUntil(t *testing.T, f *os.File, content *strings.Builder, want string) {
	t.Helper()
	eventually(t, time.Minute, "log line "+want, func() (bool, string) {
		b, _ := io.ReadAll(f)
		content.Write(b)
		return strings.Contains(content.String(), want), content.String()
	})
}

// Removing a manifest stops the pod with SIGTERM and waits for it within its
// terminationGracePeriodSeconds: a container that exits on its own after
// the signal gets to finish; one that ignores it is killed once the period
// is over. Then containers, sandbox and logs are removed.
func TestRemovingManifestHonoursGracePeriod(t *testing.T) {
	n := newNode(t)
	n.start()
	graceful := strings.Replace(podManifest(n.env, "graceful", "",
		"app=trap 'echo got-SIGTERM; sleep 2; echo clean-exit; exit 0' TERM; echo ready; while true; do sleep 0.2; done"),
		"terminationGracePeriodSeconds: 5", "terminationGracePeriodSeconds: 20", 1)
	stubborn := strings.Replace(podManifest(n.env, "stubborn", "",
		"app=trap 'echo got-SIGTERM' TERM; echo ready; while true; do sleep 0.2; done"),
		"terminationGracePeriodSeconds: 5", "terminationGracePeriodSeconds: 3", 1)
	n.write("graceful.yaml", graceful)
	n.write("stubborn.yaml", stubborn)
	g := n.waitPod("graceful-n1", "Running", time.Minute, running)
	s := n.waitPod("stubborn-n1", "Running", time.Minute, running)
	gLog, sLog := n.openLog(string(g.UID), "app"), n.openLog(string(s.UID), "app")
	var gContent, sContent strings.Builder
	logUntil(t, gLog, &gContent, "ready")
	logUntil(t, sLog, &sContent, "ready")

	removed := time.Now()
	n.remove("graceful.yaml")
	n.remove("stubborn.yaml")
	logUntil(t, gLog, &gContent, "got-SIGTERM")
	logUntil(t, gLog, &gContent, "clean-exit") // 2 s after the signal: not killed early
	logUntil(t, sLog, &sContent, "got-SIGTERM")
	eventually(t, time.Minute, "both pods removed from the runtime", func() (bool, string) {
		return len(n.sandboxes(string(g.UID)))+len(n.sandboxes(string(s.UID)))+len(n.containers("")) == 0, ""
	})
	if gone := time.Since(removed); gone < 3*time.Second {
		t.Errorf("the stubborn pod was gone %s after its manifest, before its 3 s grace period", gone)
	}
	eventually(t, 10*time.Second, "both pods gone from GET /pods", func() (bool, string) {
		pods, err := n.pods()
		return err == nil && len(pods) == 0, ""
	})
	if _, err := os.Stat(gLog.Name()); !os.IsNotExist(err) {
		t.Errorf("the log file %s is left (%v)", gLog.Name(), err)
	}
}

// A container exceeding its memory limit is OOM-killed and reported so.
func TestOOMKilled(t *testing.T) {
	n := newNode(t)
	n.start()
	m := podManifest(n.env, "hungry", "  restartPolicy: Never\n", "app=dd if=/dev/zero of=/dev/null bs=96M count=1")
	m += "    resources:\n      limits:\n        memory: 32Mi\n"
	n.write("hungry.yaml", m)
	p := n.waitPod("hungry-n1", "Failed", time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	term := containerStatus(p, "app").State.Terminated
	if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Fatalf("container state %+v, want terminated OOMKilled 137", containerStatus(p, "app").State)
	}
	if p.Status.QOSClass != v1.PodQOSBurstable {
		t.Errorf("qosClass %s", p.Status.QOSClass)
	}
	n.removeAllAndWait()
}
