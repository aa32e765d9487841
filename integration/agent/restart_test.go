package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The agent backs off restarting a crashing container — growing delays —
// counts the restarts and shows CrashLoopBackOff with the last exit. The
// back-off is scaled down with the test-only flags (1 s doubling to 4 s);
// its curve at upstream's 10 s / 5 min is agent/backoff's unit test.
func TestCrashLoopBackOff(t *testing.T) {
	n := newNode(t, "--container-backoff-initial", "1s", "--container-backoff-max", "4s")
	n.start()
	n.write("crash.yaml", podManifest(n.env, "crash", "", "app=echo crashing; exit 1"))

	seenBackOff := false
	instances := map[string]*instance{} // container ID → its times, watched through CRI
	p := n.waitPod("crash-n1", "four restarts and CrashLoopBackOff", 90*time.Second, func(p *v1.Pod) bool {
		n.watchInstances(string(p.UID), instances)
		cs := containerStatus(p, "app")
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			seenBackOff = true
			if !strings.Contains(w.Message, "back-off") || !strings.Contains(w.Message, "restarting failed container=app pod=crash-n1_default") {
				t.Errorf("CrashLoopBackOff message %q", w.Message)
			}
			if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 || lt.Reason != "Error" {
				t.Errorf("lastState while backing off: %+v", cs.LastTerminationState)
			}
			if condition(p, v1.PodReady) != v1.ConditionFalse || cs.Ready {
				t.Errorf("Ready while backing off: pod %s, container %v", condition(p, v1.PodReady), cs.Ready)
			}
		}
		return seenBackOff && cs.RestartCount >= 4
	})
	if p.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s, want Running (restartPolicy Always)", p.Status.Phase)
	}
	// The runtime's containers show the growing delays: each instance was
	// created no earlier than the back-off after the previous one finished,
	// and the delays grow: 0 before instance 1, then 1 s, 2 s, 4 s.
	n.watchInstances(string(p.UID), instances)
	byAttempt := map[uint32]*instance{}
	for _, in := range instances {
		byAttempt[in.attempt] = in
	}
	wantDelay := map[uint32]time.Duration{2: time.Second, 3: 2 * time.Second, 4: 4 * time.Second}
	var gaps []time.Duration
	for a := uint32(2); a <= 4; a++ {
		prev, cur := byAttempt[a-1], byAttempt[a]
		if prev == nil || cur == nil || prev.finished.IsZero() {
			t.Fatalf("instances %d and %d not both seen through CRI: %v", a-1, a, instances)
		}
		gap := cur.created.Sub(prev.finished)
		gaps = append(gaps, gap)
		if gap < wantDelay[a]-50*time.Millisecond {
			t.Errorf("instance %d created %s after instance %d exited; the back-off is %s", a, gap, a-1, wantDelay[a])
		}
	}
	if gaps[2] <= gaps[0] {
		t.Errorf("restart delays did not grow: %v", gaps)
	}
	if cs := n.containers(string(p.UID)); len(cs) > 2 {
		t.Errorf("%d containers kept; the GC keeps the newest dead one besides the current", len(cs))
	}
	n.removeAllAndWait()
}

// instance is one container of a crash loop as the runtime reported it.
type instance struct {
	attempt           uint32
	created, finished time.Time
}

func (in *instance) String() string {
	return fmt.Sprintf("#%d %s–%s", in.attempt, in.created.Format("15:04:05.000"), in.finished.Format("15:04:05.000"))
}

// watchInstances records the pod's containers' creation and finish times.
func (n *node) watchInstances(uid string, seen map[string]*instance) {
	for _, c := range n.containers(uid) {
		in := seen[c.GetId()]
		if in == nil {
			in = &instance{attempt: c.GetMetadata().GetAttempt(), created: time.Unix(0, c.GetCreatedAt())}
			seen[c.GetId()] = in
		}
		if in.finished.IsZero() && c.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			if st, err := n.cri.ContainerStatus(context.Background(), c.GetId(), false); err == nil {
				in.finished = time.Unix(0, st.GetStatus().GetFinishedAt())
			}
		}
	}
}

// restartPolicy Never leaves a failed pod Failed with its exit code, and the
// container is not restarted.
func TestRestartPolicyNeverFails(t *testing.T) {
	n := newNode(t)
	n.start()
	n.write("once.yaml", podManifest(n.env, "once", "  restartPolicy: Never\n", "app=echo bye; exit 3"))
	p := n.waitPod("once-n1", "Failed", time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	cs := containerStatus(p, "app")
	if term := cs.State.Terminated; term == nil || term.ExitCode != 3 || term.Reason != "Error" || cs.RestartCount != 0 {
		t.Fatalf("container status %+v", cs)
	}
	if c := n.containers(string(p.UID)); len(c) != 1 {
		t.Fatalf("%d containers under restartPolicy Never", len(c))
	}
	n.write("done.yaml", podManifest(n.env, "done", "  restartPolicy: OnFailure\n", "app=exit 0"))
	n.waitPod("done-n1", "Succeeded", time.Minute, func(p *v1.Pod) bool {
		term := containerStatus(p, "app").State.Terminated
		return p.Status.Phase == v1.PodSucceeded && term != nil && term.Reason == "Completed"
	})
	n.removeAllAndWait()
}

// A failing init container blocks the app container; under restartPolicy
// Never the pod fails. Init containers that succeed run one by one first.
func TestInitContainers(t *testing.T) {
	n := newNode(t)
	n.start()
	initFail := podManifest(n.env, "blocked", "  restartPolicy: Never\n  initContainers:\n  - name: setup\n    image: "+n.env.BusyboxImage+"\n    command: [\"sh\", \"-c\", \"exit 7\"]\n", "app="+sleeper)
	n.write("blocked.yaml", initFail)
	initOK := podManifest(n.env, "ordered", "  initContainers:\n"+
		"  - name: first\n    image: "+n.env.BusyboxImage+"\n    command: [\"sh\", \"-c\", \"exit 0\"]\n"+
		"  - name: second\n    image: "+n.env.BusyboxImage+"\n    command: [\"sh\", \"-c\", \"exit 0\"]\n", "app="+sleeper)
	n.write("ordered.yaml", initOK)

	p := n.waitPod("blocked-n1", "Failed", time.Minute, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if term := containerStatus(p, "setup").State.Terminated; term == nil || term.ExitCode != 7 {
		t.Errorf("init status %+v", containerStatus(p, "setup"))
	}
	if w := containerStatus(p, "app").State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Errorf("app status %+v, want waiting PodInitializing", containerStatus(p, "app"))
	}
	if condition(p, v1.PodInitialized) != v1.ConditionFalse {
		t.Errorf("Initialized = %s", condition(p, v1.PodInitialized))
	}
	for _, c := range n.containers(string(p.UID)) {
		if c.GetMetadata().GetName() == "app" {
			t.Fatal("the app container was created although its init container failed")
		}
	}

	p = n.waitPod("ordered-n1", "Running", time.Minute, running)
	first, second := containerStatus(p, "first").State.Terminated, containerStatus(p, "second").State.Terminated
	if first == nil || second == nil || first.ExitCode != 0 || second.ExitCode != 0 {
		t.Fatalf("init statuses %+v %+v", first, second)
	}
	app := containerStatus(p, "app").State.Running
	if second.StartedAt.Before(&first.FinishedAt) || app.StartedAt.Before(&second.FinishedAt) {
		t.Errorf("not in order: first %v–%v, second %v–%v, app %v", first.StartedAt, first.FinishedAt, second.StartedAt, second.FinishedAt, app.StartedAt)
	}
	n.removeAllAndWait()
}

// Restarting the agent with ten running pods restarts none of them: it
// adopts the sandboxes and containers by their labels. A pod whose manifest
// went away while the agent was down is removed as an orphan.
func TestAgentRestartAdoptsRunningPods(t *testing.T) {
	n := newNode(t)
	a := n.start()
	for i := range 10 {
		n.write(fmt.Sprintf("p%d.yaml", i), podManifest(n.env, fmt.Sprintf("p%d", i), "", "app="+sleeper))
	}
	for i := range 10 {
		n.waitPod(fmt.Sprintf("p%d-n1", i), "Running", 2*time.Minute, running)
	}
	before := map[string]string{} // container ID → state
	for _, c := range n.containers("") {
		before[c.GetId()] = c.GetState().String()
	}
	sandboxes := len(n.sandboxes(""))
	a.stop(t)
	n.remove("p9.yaml") // gone while the agent is down

	n.start()
	for i := range 9 {
		p := n.waitPod(fmt.Sprintf("p%d-n1", i), "Running in the new agent", time.Minute, running)
		if rc := containerStatus(p, "app").RestartCount; rc != 0 {
			t.Errorf("%s restartCount %d", p.Name, rc)
		}
	}
	eventually(t, time.Minute, "the orphan p9 removed", func() (bool, string) {
		return len(n.sandboxes("")) == 9, fmt.Sprintf("%d sandboxes", len(n.sandboxes("")))
	})
	after := n.containers("")
	if len(after) != 9 || sandboxes != 10 {
		t.Fatalf("%d containers after the restart (want the 9 adopted), %d sandboxes before", len(after), sandboxes)
	}
	for _, c := range after {
		if state, ok := before[c.GetId()]; !ok || state != c.GetState().String() || c.GetState().String() != "CONTAINER_RUNNING" {
			t.Errorf("container %s (%s) was not adopted as it was (%s → %s)", c.GetMetadata().GetName(), c.GetId(), state, c.GetState())
		}
	}
	n.removeAllAndWait()
}
