package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/integration/nodeenv"
)

// fastBackOff keeps restart tests short (hidden test-only flags).
var fastBackOff = []string{"--container-backoff-initial", "200ms", "--container-backoff-max", "1s"}

// exec runs cmd in the pod's container through CRI and fails the test if
// it does not exit 0.
func (n *node) exec(p *v1.Pod, container string, cmd ...string) string {
	n.t.Helper()
	id := strings.TrimPrefix(containerStatus(p, container).ContainerID, "containerd://")
	stdout, stderr, code, err := n.cri.ExecSync(context.Background(), id, cmd, 10*time.Second)
	if err != nil || code != 0 {
		n.t.Fatalf("exec %v in %s: exit %d, %v: %s%s", cmd, container, code, err, stdout, stderr)
	}
	return string(stdout)
}

// isReady reports the container's ready and the pod's Ready and
// ContainersReady conditions all being want.
func isReady(p *v1.Pod, container string, want bool) bool {
	cond := v1.ConditionFalse
	if want {
		cond = v1.ConditionTrue
	}
	cs := containerStatus(p, container)
	return cs.State.Running != nil && cs.Ready == want && condition(p, v1.PodReady) == cond && condition(p, v1.ContainersReady) == cond
}

// probeManifest is a one-container busybox pod running cmd with extra
// container fields (YAML at the container's indentation).
func probeManifest(env *nodeenv.Env, name, restartPolicy, cmd, containerYAML string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: %s
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", %q]
%s`, name, restartPolicy, env.BusyboxImage, cmd, containerYAML)
}

// httpGet readiness against busybox httpd, by named port: Ready follows
// the file being served, both ways, without restarts.
func TestHTTPGetReadinessFlipsReady(t *testing.T) {
	n := newNode(t)
	n.start()
	n.write("web.yaml", probeManifest(n.env, "web", "Always",
		"mkdir -p /www && echo ok > /www/ready.html && exec httpd -f -p 8080 -h /www", `    ports:
    - name: http
      containerPort: 8080
    readinessProbe:
      httpGet:
        path: /ready.html
        port: http
      periodSeconds: 1
      failureThreshold: 1
`))
	p := n.waitPod("web-n1", "Ready", time.Minute, func(p *v1.Pod) bool { return isReady(p, "app", true) })
	n.exec(p, "app", "rm", "/www/ready.html")
	n.waitPod("web-n1", "not Ready after the page went away", 30*time.Second, func(p *v1.Pod) bool { return isReady(p, "app", false) })
	n.exec(p, "app", "sh", "-c", "echo ok > /www/ready.html")
	p = n.waitPod("web-n1", "Ready again", 30*time.Second, func(p *v1.Pod) bool { return isReady(p, "app", true) })
	if cs := containerStatus(p, "app"); cs.RestartCount != 0 {
		t.Errorf("readiness restarted the container: %+v", cs)
	}
	n.removeAllAndWait()
}

// tcpSocket readiness on busybox nc: Ready while something listens on the
// port, both ways. The container runs a one-connection nc again and again
// while /tmp/listen exists.
func TestTCPSocketReadiness(t *testing.T) {
	n := newNode(t)
	n.start()
	n.write("tcp.yaml", probeManifest(n.env, "tcp", "Always",
		"trap 'exit 0' TERM; while true; do if [ -f /tmp/listen ]; then nc -l -p 9090 -e true; else sleep 0.2; fi; done", `    readinessProbe:
      tcpSocket:
        port: 9090
      periodSeconds: 1
      failureThreshold: 2
`))
	p := n.waitPod("tcp-n1", "running, not Ready", time.Minute, func(p *v1.Pod) bool { return isReady(p, "app", false) })
	n.exec(p, "app", "touch", "/tmp/listen")
	n.waitPod("tcp-n1", "Ready once nc listens", 30*time.Second, func(p *v1.Pod) bool { return isReady(p, "app", true) })
	n.exec(p, "app", "rm", "/tmp/listen")
	p = n.waitPod("tcp-n1", "not Ready once nothing listens", 30*time.Second, func(p *v1.Pod) bool { return isReady(p, "app", false) })
	if cs := containerStatus(p, "app"); cs.RestartCount != 0 {
		t.Errorf("readiness restarted the container: %+v", cs)
	}
	n.removeAllAndWait()
}

// exec liveness: each instance of the container turns unhealthy a moment
// after it starts; the agent kills and restarts it, counting restarts.
func TestExecLivenessRestartsContainer(t *testing.T) {
	n := newNode(t, fastBackOff...)
	n.start()
	n.write("live.yaml", probeManifest(n.env, "live", "Always",
		"trap 'exit 0' TERM; touch /tmp/healthy; sleep 1; rm /tmp/healthy; while true; do sleep 0.2; done", `    livenessProbe:
      exec:
        command: ["cat", "/tmp/healthy"]
      periodSeconds: 1
      failureThreshold: 1
`))
	seen := map[string]bool{}
	p := n.waitPod("live-n1", "two restarts", 90*time.Second, func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		if cs.ContainerID != "" {
			seen[cs.ContainerID] = true
		}
		return cs.RestartCount >= 2
	})
	if len(seen) < 2 {
		t.Errorf("saw container IDs %v, want new containers for the restarts", seen)
	}
	if cs := containerStatus(p, "app"); cs.LastTerminationState.Terminated == nil {
		t.Errorf("no last termination state after liveness restarts: %+v", cs)
	}
	n.removeAllAndWait()
}

// A startup probe protects a slow starter from its liveness probe: the
// container becomes healthy only after 4 s, liveness allows one failure
// per second, yet it is never restarted.
func TestStartupProbeProtectsSlowContainer(t *testing.T) {
	n := newNode(t, fastBackOff...)
	n.start()
	n.write("slow.yaml", probeManifest(n.env, "slow", "Always",
		"trap 'exit 0' TERM; sleep 4; touch /tmp/up; while true; do sleep 0.2; done", `    startupProbe:
      exec:
        command: ["cat", "/tmp/up"]
      periodSeconds: 1
      failureThreshold: 30
    livenessProbe:
      exec:
        command: ["cat", "/tmp/up"]
      periodSeconds: 1
      failureThreshold: 1
`))
	p := n.waitPod("slow-n1", "running, not started", time.Minute, func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs.State.Running != nil && cs.Started != nil && !*cs.Started
	})
	if cs := containerStatus(p, "app"); cs.Ready {
		t.Errorf("ready before started: %+v", cs)
	}
	p = n.waitPod("slow-n1", "started and Ready", time.Minute, func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs.Started != nil && *cs.Started && isReady(p, "app", true)
	})
	if cs := containerStatus(p, "app"); cs.RestartCount != 0 {
		t.Errorf("the slow starter was restarted: %+v", cs)
	}
	n.removeAllAndWait()
}

// postStart runs after the container starts and before it is reported
// Running: the file it writes is there as soon as the status says Running,
// and while it runs the status still says waiting. A failing postStart gets
// the container killed and restarted with PostStartHookError.
func TestPostStartHook(t *testing.T) {
	n := newNode(t, fastBackOff...)
	n.start()
	n.write("hooked.yaml", probeManifest(n.env, "hooked", "Always", sleeperCmd, `    lifecycle:
      postStart:
        exec:
          command: ["sh", "-c", "sleep 2; echo from-hook > /tmp/poststart"]
`))
	n.write("badhook.yaml", probeManifest(n.env, "badhook", "Always", sleeperCmd, `    lifecycle:
      postStart:
        exec:
          command: ["sh", "-c", "echo broken >&2; exit 3"]
`))
	sawWaitingWhileRunning := false
	p := n.waitPod("hooked-n1", "Running", time.Minute, func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		if cs.State.Running == nil {
			// The runtime already runs it: the hook is in progress.
			for _, c := range n.containers(string(p.UID)) {
				if c.GetState() == 1 { // CONTAINER_RUNNING
					sawWaitingWhileRunning = sawWaitingWhileRunning || cs.State.Waiting != nil
				}
			}
		}
		return cs.State.Running != nil
	})
	if out := n.exec(p, "app", "cat", "/tmp/poststart"); out != "from-hook\n" {
		t.Errorf("postStart's file = %q when the container was first reported Running", out)
	}
	if !sawWaitingWhileRunning {
		t.Errorf("never saw the container waiting while its postStart hook ran")
	}
	reasons := map[string]bool{}
	n.waitPod("badhook-n1", "restarted after PostStartHookError", time.Minute, func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		if w := cs.State.Waiting; w != nil {
			reasons[w.Reason] = true
			if w.Reason == "PostStartHookError" && !strings.Contains(w.Message, "exited with 3: broken") {
				t.Errorf("PostStartHookError message %q", w.Message)
			}
		}
		return reasons["PostStartHookError"] && cs.RestartCount >= 2
	})
	if p := n.pod("badhook-n1"); p != nil && containerStatus(p, "app").State.Running != nil {
		t.Errorf("a container whose postStart hook fails is reported Running: %+v", containerStatus(p, "app"))
	}
	n.removeAllAndWait()
}

const sleeperCmd = "trap 'exit 0' TERM; while true; do sleep 0.2; done"

// preStop runs before the stop signal (its line comes before the TERM
// trap's in a shared file), and a hung preStop is cut off at the end of the
// grace period so the pod still goes away.
func TestPreStopHook(t *testing.T) {
	n := newNode(t)
	n.start()
	shared := t.TempDir()
	manifest := func(name, preStop string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 3
  volumes:
  - name: shared
    hostPath:
      path: %s
      type: Directory
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "trap 'echo term >> /shared/%s; exit 0' TERM; while true; do sleep 0.2; done"]
    volumeMounts:
    - name: shared
      mountPath: /shared
    lifecycle:
      preStop:
        exec:
          command: ["sh", "-c", %q]
`, name, shared, n.env.BusyboxImage, name, preStop)
	}
	n.write("clean.yaml", manifest("clean", "echo prestop >> /shared/clean"))
	n.write("hung.yaml", manifest("hung", "echo prestop >> /shared/hung; sleep 1000"))
	for _, name := range []string{"clean", "hung"} {
		n.waitPod(name+"-n1", "Running", time.Minute, func(p *v1.Pod) bool { return containerStatus(p, "app").State.Running != nil })
	}
	n.removeAllAndWait() // returns only once both pods are gone: the hung hook was cut off
	for _, name := range []string{"clean", "hung"} {
		b, err := os.ReadFile(filepath.Join(shared, name))
		if err != nil || string(b) != "prestop\nterm\n" {
			t.Errorf("%s: shared file %q (%v), want the preStop line before the SIGTERM trap's", name, b, err)
		}
	}
}
