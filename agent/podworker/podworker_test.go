package podworker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/backoff"
	"berth/agent/containerconfig"
	"berth/agent/images"
	"berth/agent/pleg"
	"berth/agent/podruntime"
	"berth/agent/sandboxconfig"
	"berth/agent/status"
	"berth/agent/volumes"
	"berth/cri"
	"berth/cri/critest"
	"berth/internal/errdefs"
)

// harness runs a Manager against the in-memory CRI runtime.
type harness struct {
	t      testing.TB
	srv    *critest.Server
	cri    *cri.Client
	status *status.Manager
	m      *Manager
	root   string
	logs   string
	cancel context.CancelFunc
	done   chan error
	// configure, if set, adjusts each manager's Config before New.
	configure func(*Config)
	// relist is the PLEG's period; zero: its default.
	relist time.Duration
}

// fastBackOff keeps crash-loop tests short; the curve's shape is
// agent/backoff's to test.
var fastBackOff = backoff.Policy{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond, ResetAfter: time.Minute}

func newHarness(t *testing.T, srv *critest.Server) *harness { return newBenchHarness(t, srv) }

// newBenchHarness is newHarness for tests and benchmarks.
func newBenchHarness(t testing.TB, srv *critest.Server) *harness {
	t.Helper()
	return newConfiguredHarness(t, srv, nil)
}

// newConfiguredHarness is newHarness with configure applied to the
// manager's Config.
func newConfiguredHarness(t testing.TB, srv *critest.Server, configure func(*Config)) *harness {
	t.Helper()
	return newRelistHarness(t, srv, 0, configure)
}

// newRelistHarness is newConfiguredHarness with the PLEG relisting every
// relist.
func newRelistHarness(t testing.TB, srv *critest.Server, relist time.Duration, configure func(*Config)) *harness {
	t.Helper()
	ctx := context.Background()
	client, err := cri.New(ctx, cri.Config{Endpoint: srv.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	h := &harness{t: t, srv: srv, cri: client, status: status.NewManager(), root: t.TempDir(), logs: t.TempDir(), configure: configure, relist: relist}
	h.start()
	return h
}

// start runs a (new) manager; stop ends it, leaving the pods as they are.
func (h *harness) start() {
	h.t.Helper()
	puller, err := images.NewPuller(images.Config{Images: h.cri, InitialBackOff: 100 * time.Millisecond, MaxBackOff: 400 * time.Millisecond})
	if err != nil {
		h.t.Fatal(err)
	}
	vols, err := volumes.New(volumes.Config{RootDir: h.root})
	if err != nil {
		h.t.Fatal(err)
	}
	cfg := Config{
		CRI: h.cri, Cache: podruntime.NewCache(podruntime.New(h.cri)), Status: h.status, BackOff: backoff.New(fastBackOff),
		Images:           puller,
		Volumes:          vols,
		SandboxOptions:   sandboxconfig.Options{PodLogDir: h.logs},
		ContainerOptions: containerconfig.Options{NodeName: "node1", MemoryCapacity: 8 << 30},
		RootDir:          h.root,
		Resync:           200 * time.Millisecond,
		MaxStarts:        2,
	}
	if h.configure != nil {
		h.configure(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	// The PLEG fills the runtime cache the workers read, as the agent wires it.
	detector, err := pleg.New(pleg.Config{Cache: cfg.Cache, CRI: h.cri, Period: h.relist, Changed: m.Observed})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.m, h.cancel, h.done = m, cancel, make(chan error, 2)
	go func() { h.done <- m.Run(ctx) }()
	go func() { h.done <- detector.Run(ctx) }()
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	for range 2 {
		if err := <-h.done; err != nil {
			h.t.Errorf("Run: %v", err)
		}
	}
	h.cancel = nil
}

func testPod(name string, policy v1.RestartPolicy, inits []string, apps ...string) *v1.Pod {
	grace := int64(3)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	p.Spec.RestartPolicy = policy
	p.Spec.TerminationGracePeriodSeconds = &grace
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "busybox", TerminationMessagePath: "/dev/termination-log"})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "busybox", TerminationMessagePath: "/dev/termination-log"})
	}
	return p
}

// eventually polls cond until it holds or 30 s pass (generous: the race
// detector and a busy CI machine slow everything down).
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, detail)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) containers(uid types.UID, name string) []*runtimeapi.Container {
	h.t.Helper()
	sel := map[string]string{cri.LabelPodUID: string(uid)}
	if name != "" {
		sel[cri.LabelContainerName] = name
	}
	cs, err := h.cri.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		h.t.Fatal(err)
	}
	return cs
}

func (h *harness) sandboxes(uid types.UID) []*runtimeapi.PodSandbox {
	h.t.Helper()
	sbs, err := h.cri.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{cri.LabelPodUID: string(uid)}})
	if err != nil {
		h.t.Fatal(err)
	}
	return sbs
}

func (h *harness) running(uid types.UID, name string) *runtimeapi.Container {
	for _, c := range h.containers(uid, name) {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return c
		}
	}
	return nil
}

func (h *harness) podStatus(uid types.UID) v1.PodStatus {
	st, _ := h.status.Status(uid)
	return st
}

func containerStatus(st v1.PodStatus, name string) v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name {
				return cs
			}
		}
	}
	return v1.ContainerStatus{}
}

func TestPodStartsAndReportsRunning(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("web", v1.RestartPolicyAlways, nil, "app", "side")
	h.m.Update(pod)

	eventually(t, "pod Running and Ready", func() (bool, string) {
		st := h.podStatus(pod.UID)
		return st.Phase == v1.PodRunning && len(st.Conditions) == 4 && st.Conditions[2].Status == v1.ConditionTrue, fmt.Sprintf("%+v", st)
	})
	st := h.podStatus(pod.UID)
	if st.PodIP == "" || len(st.PodIPs) != 1 {
		t.Errorf("podIP %q podIPs %v, want the sandbox's IP", st.PodIP, st.PodIPs)
	}
	sbs := h.sandboxes(pod.UID)
	if len(sbs) != 1 || sbs[0].GetLabels()[cri.LabelPodName] != "web" {
		t.Fatalf("sandboxes %v, want one labelled for the pod", sbs)
	}
	if _, err := os.Stat(filepath.Join(h.logs, "default_web_uid-web")); err != nil {
		t.Errorf("pod log directory: %v", err)
	}
	for _, n := range []string{"app", "side"} {
		if c := h.running(pod.UID, n); c == nil || c.GetPodSandboxId() != sbs[0].GetId() {
			t.Errorf("container %s not running in the sandbox", n)
		}
		if cs := containerStatus(st, n); !cs.Ready || cs.State.Running == nil || cs.RestartCount != 0 {
			t.Errorf("status of %s = %+v", n, cs)
		}
	}
	// Nothing more happens to a running pod.
	creates := srv.Calls("CreateContainer")
	h.m.Wake(pod.UID)
	h.m.Wake(pod.UID)
	time.Sleep(300 * time.Millisecond) // two resync periods: nothing may be created meanwhile
	if n := srv.Calls("CreateContainer"); n != creates {
		t.Errorf("a running pod got %d more containers", n-creates)
	}
}

func TestInitContainersRunInOrderBeforeApps(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("init", v1.RestartPolicyAlways, []string{"first", "second"}, "app")
	h.m.Update(pod)

	for _, name := range []string{"first", "second"} {
		var c *runtimeapi.Container
		eventually(t, name+" running", func() (bool, string) {
			c = h.running(pod.UID, name)
			return c != nil, ""
		})
		if cs := h.containers(pod.UID, "app"); len(cs) != 0 {
			t.Fatalf("app container created while init container %s runs", name)
		}
		eventually(t, "Pending with "+name+" running", func() (bool, string) {
			st := h.podStatus(pod.UID)
			cs := containerStatus(st, name)
			return st.Phase == v1.PodPending && cs.State.Running != nil, fmt.Sprintf("%+v", st)
		})
		if err := srv.ExitContainer(c.GetId(), 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "app running", func() (bool, string) { return h.running(pod.UID, "app") != nil, "" })
	eventually(t, "pod Running, initialized", func() (bool, string) {
		st := h.podStatus(pod.UID)
		return st.Phase == v1.PodRunning && st.Conditions[1].Status == v1.ConditionTrue, fmt.Sprintf("%+v", st)
	})
}

func TestFailingInitContainerBlocksAppAndFailsNeverPod(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("badinit", v1.RestartPolicyNever, []string{"init"}, "app")
	h.m.Update(pod)
	var c *runtimeapi.Container
	eventually(t, "init running", func() (bool, string) { c = h.running(pod.UID, "init"); return c != nil, "" })
	if err := srv.ExitContainer(c.GetId(), 3, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod Failed", func() (bool, string) {
		st := h.podStatus(pod.UID)
		return st.Phase == v1.PodFailed, fmt.Sprintf("%+v", st)
	})
	if cs := h.containers(pod.UID, "app"); len(cs) != 0 {
		t.Fatal("app container created after its init container failed")
	}
	if n := len(h.containers(pod.UID, "init")); n != 1 {
		t.Fatalf("init container ran %d times under restartPolicy Never", n)
	}
	eventually(t, "sandbox stopped", func() (bool, string) {
		sbs := h.sandboxes(pod.UID)
		return len(sbs) == 1 && sbs[0].GetState() == runtimeapi.PodSandboxState_SANDBOX_NOTREADY, ""
	})
}

func TestCrashLoopBackOffCountsRestarts(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("crash", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)

	sawBackOff := false
	for restarts := 0; restarts < 4; restarts++ {
		var c *runtimeapi.Container
		eventually(t, fmt.Sprintf("instance %d running", restarts), func() (bool, string) {
			c = h.running(pod.UID, "app")
			return c != nil && c.GetMetadata().GetAttempt() == uint32(restarts), fmt.Sprintf("%v", c)
		})
		if err := srv.ExitContainer(c.GetId(), 1, ""); err != nil {
			t.Fatal(err)
		}
		if restarts == 0 {
			continue // the first restart is immediate
		}
		eventually(t, "a status after the exit", func() (bool, string) {
			cs := containerStatus(h.podStatus(pod.UID), "app")
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
				sawBackOff = true
				if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
					return false, fmt.Sprintf("lastState %+v", cs.LastTerminationState)
				}
				return cs.RestartCount == int32(restarts), fmt.Sprintf("restartCount %d", cs.RestartCount)
			}
			return cs.RestartCount == int32(restarts+1), fmt.Sprintf("%+v", cs)
		})
	}
	if !sawBackOff {
		t.Error("never saw CrashLoopBackOff between restarts")
	}
	// Dead instances beyond the newest are garbage-collected.
	eventually(t, "dead containers collected", func() (bool, string) {
		dead := 0
		for _, c := range h.containers(pod.UID, "app") {
			if c.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
				dead++
			}
		}
		return dead <= 1, fmt.Sprintf("%d dead", dead)
	})
}

func TestRestartPolicyNeverLeavesFailed(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("once", v1.RestartPolicyNever, nil, "app")
	h.m.Update(pod)
	var c *runtimeapi.Container
	eventually(t, "running", func() (bool, string) { c = h.running(pod.UID, "app"); return c != nil, "" })
	if err := srv.ExitContainer(c.GetId(), 2, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Failed", func() (bool, string) {
		st := h.podStatus(pod.UID)
		cs := containerStatus(st, "app")
		return st.Phase == v1.PodFailed && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 2 &&
			cs.State.Terminated.Reason == "Error", fmt.Sprintf("%+v", st)
	})
	time.Sleep(300 * time.Millisecond) // a resync or two: still no restart
	if n := len(h.containers(pod.UID, "app")); n != 1 {
		t.Fatalf("%d instances under restartPolicy Never", n)
	}
}

func TestTerminationMessageIsReported(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("msg", v1.RestartPolicyNever, nil, "app")
	h.m.Update(pod)
	var c *runtimeapi.Container
	eventually(t, "running", func() (bool, string) { c = h.running(pod.UID, "app"); return c != nil, "" })
	resp, err := h.cri.ContainerStatus(context.Background(), c.GetId(), false)
	if err != nil {
		t.Fatal(err)
	}
	var host string
	for _, m := range resp.GetStatus().GetMounts() {
		if m.GetContainerPath() == "/dev/termination-log" {
			host = m.GetHostPath()
		}
	}
	if host == "" {
		t.Fatalf("no termination message mount in %v", resp.GetStatus().GetMounts())
	}
	if err := os.WriteFile(host, []byte("goodbye"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.ExitContainer(c.GetId(), 0, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "message in status", func() (bool, string) {
		cs := containerStatus(h.podStatus(pod.UID), "app")
		return cs.State.Terminated != nil && cs.State.Terminated.Message == "goodbye", fmt.Sprintf("%+v", cs.State)
	})
	if st := h.podStatus(pod.UID); st.Phase != v1.PodSucceeded {
		t.Errorf("phase %s, want Succeeded", st.Phase)
	}
}

func TestRemoveTerminatesAndCleansUp(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("bye", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	eventually(t, "running", func() (bool, string) { return h.running(pod.UID, "app") != nil, "" })
	h.m.Remove(pod.UID)
	eventually(t, "all gone", func() (bool, string) {
		return len(h.containers(pod.UID, "")) == 0 && len(h.sandboxes(pod.UID)) == 0 && !h.m.Known(pod.UID), ""
	})
	if srv.Calls("StopContainer") == 0 {
		t.Error("containers removed without being stopped first")
	}
	if _, ok := h.status.Status(pod.UID); ok {
		t.Error("status kept for a removed pod")
	}
	for _, dir := range []string{filepath.Join(h.logs, "default_bye_uid-bye"), filepath.Join(h.root, "pods", "uid-bye")} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", dir, err)
		}
	}
	// The same pod added again runs again.
	h.m.Update(pod)
	eventually(t, "running again", func() (bool, string) { return h.running(pod.UID, "app") != nil, "" })
}

// TestPodBeingDeletedIsTerminatedNotStarted: as the kubelet, a pod with a
// deletionTimestamp is stopped by Update alone, and one first seen already
// being deleted is never started (no sandbox, no volumes).
func TestPodBeingDeletedIsTerminatedNotStarted(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	running := testPod("running", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(running)
	eventually(t, "running", func() (bool, string) { return h.running(running.UID, "app") != nil, "" })
	now := metav1.Now()
	deleted := running.DeepCopy()
	deleted.DeletionTimestamp = &now
	h.m.Update(deleted)
	eventually(t, "the deleted pod gone", func() (bool, string) {
		return len(h.containers(running.UID, "")) == 0 && len(h.sandboxes(running.UID)) == 0 && !h.m.Known(running.UID), ""
	})

	sandboxes := srv.Calls("RunPodSandbox")
	late := testPod("late", v1.RestartPolicyAlways, nil, "app")
	late.DeletionTimestamp = &now
	h.m.Update(late)
	eventually(t, "the worker of the late pod ended", func() (bool, string) { return !h.m.Known(late.UID), "" })
	if n := srv.Calls("RunPodSandbox") - sandboxes; n != 0 {
		t.Errorf("%d sandboxes run for a pod first seen being deleted", n)
	}
	if _, err := os.Stat(filepath.Join(h.root, "pods", string(late.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod directory of a pod never started: %v", err)
	}
}

func TestRemoveRetriesWhenTheRuntimeFails(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("stubborn", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	eventually(t, "running", func() (bool, string) { return h.running(pod.UID, "app") != nil, "" })
	srv.InjectN("RemovePodSandbox", fmt.Errorf("disk on fire"), 2)
	h.m.Remove(pod.UID)
	eventually(t, "sandbox removed after retries", func() (bool, string) {
		return len(h.sandboxes(pod.UID)) == 0 && !h.m.Known(pod.UID), fmt.Sprintf("%d calls", srv.Calls("RemovePodSandbox"))
	})
	if srv.Calls("RemovePodSandbox") < 3 {
		t.Errorf("RemovePodSandbox called %d times, want retries", srv.Calls("RemovePodSandbox"))
	}
}

func TestRestartedManagerAdoptsRunningPods(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	var pods []*v1.Pod
	for i := range 5 {
		p := testPod(fmt.Sprintf("p%d", i), v1.RestartPolicyAlways, nil, "app")
		pods = append(pods, p)
		h.m.Update(p)
	}
	for _, p := range pods {
		eventually(t, p.Name+" running", func() (bool, string) { return h.running(p.UID, "app") != nil, "" })
	}
	h.stop()
	creates, sandboxes, stops := srv.Calls("CreateContainer"), srv.Calls("RunPodSandbox"), srv.Calls("StopContainer")
	h.status = status.NewManager()
	h.start()
	for _, p := range pods {
		h.m.Update(p)
	}
	for _, p := range pods {
		eventually(t, p.Name+" Running in the new manager's status", func() (bool, string) {
			return h.podStatus(p.UID).Phase == v1.PodRunning, ""
		})
	}
	if srv.Calls("CreateContainer") != creates || srv.Calls("RunPodSandbox") != sandboxes || srv.Calls("StopContainer") != stops {
		t.Fatalf("adoption touched containers: creates %d→%d, sandboxes %d→%d, stops %d→%d", creates, srv.Calls("CreateContainer"),
			sandboxes, srv.Calls("RunPodSandbox"), stops, srv.Calls("StopContainer"))
	}
}

func TestOrphanIsRemovedWithRecordedGracePeriod(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("orphan", v1.RestartPolicyAlways, nil, "app")
	h.m.Update(pod)
	eventually(t, "running", func() (bool, string) { return h.running(pod.UID, "app") != nil, "" })
	h.stop()
	h.start() // the new manager does not know the pod
	h.m.RemoveOrphan(pod.UID)
	eventually(t, "orphan gone", func() (bool, string) {
		return len(h.containers(pod.UID, "")) == 0 && len(h.sandboxes(pod.UID)) == 0, ""
	})
}

func TestImagePullFailureBacksOff(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	pod := testPod("img", v1.RestartPolicyAlways, nil, "app", "good")
	pod.Spec.Containers[0].Image = "example.invalid/nope:1"
	h.m.Update(pod)
	seen := map[string]string{}
	eventually(t, "ErrImagePull then ImagePullBackOff, the other container running", func() (bool, string) {
		st := h.podStatus(pod.UID)
		if w := containerStatus(st, "app").State.Waiting; w != nil && w.Reason != "" {
			seen[w.Reason] = w.Message
		}
		_, pull := seen["ErrImagePull"]
		_, back := seen["ImagePullBackOff"]
		return pull && back && h.running(pod.UID, "good") != nil && st.Phase == v1.PodPending, fmt.Sprintf("seen %v", seen)
	})
	if !strings.Contains(seen["ErrImagePull"], "example.invalid/nope:1") {
		t.Errorf("ErrImagePull message %q does not carry the runtime's message", seen["ErrImagePull"])
	}
	srv.AddImage("example.invalid/nope:1")
	eventually(t, "running once the image exists", func() (bool, string) { return h.running(pod.UID, "app") != nil, "" })
}

func TestSandboxStartsAreBounded(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	release := make(chan struct{})
	arrived := srv.Delay("RunPodSandbox", release)
	h := newHarness(t, srv) // MaxStarts 2
	for i := range 5 {
		h.m.Update(testPod(fmt.Sprintf("b%d", i), v1.RestartPolicyAlways, nil, "app"))
	}
	<-arrived
	<-arrived
	time.Sleep(100 * time.Millisecond) // give a third start the chance to (wrongly) arrive
	if n := srv.Calls("RunPodSandbox"); n != 2 {
		t.Fatalf("%d sandbox starts in flight, want 2", n)
	}
	close(release)
	for i := range 5 {
		uid := types.UID(fmt.Sprintf("uid-b%d", i))
		eventually(t, "all pods running", func() (bool, string) { return h.running(uid, "app") != nil, "" })
	}
}

func TestConfigValidation(t *testing.T) {
	_, err := New(Config{})
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("New(empty) = %v, want ErrInvalidArgument", err)
	}
}

func TestVolumesAreMountedAndTornDown(t *testing.T) {
	srv := critest.NewServer(t)
	srv.AddImage("busybox")
	h := newHarness(t, srv)
	hostDir := t.TempDir()
	pod := testPod("vols", v1.RestartPolicyAlways, nil, "app")
	pod.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}, {Name: "host", MountPath: "/host", ReadOnly: true}}
	h.m.Update(pod)
	var c *runtimeapi.Container
	eventually(t, "running", func() (bool, string) { c = h.running(pod.UID, "app"); return c != nil, "" })
	st, err := h.cri.ContainerStatus(context.Background(), c.GetId(), false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*runtimeapi.Mount{}
	for _, m := range st.GetStatus().GetMounts() {
		got[m.GetContainerPath()] = m
	}
	scratch, host := got["/scratch"], got["/host"]
	if scratch == nil || !strings.HasPrefix(scratch.GetHostPath(), filepath.Join(h.root, "pods", "uid-vols", "volumes")) {
		t.Fatalf("emptyDir mount %v", scratch)
	}
	if host == nil || host.GetHostPath() != hostDir || !host.GetReadonly() {
		t.Fatalf("hostPath mount %v", host)
	}
	h.m.Remove(pod.UID)
	eventually(t, "pod gone", func() (bool, string) { return !h.m.Known(pod.UID), "" })
	if _, err := os.Stat(filepath.Join(h.root, "pods", "uid-vols")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod directory left: %v", err)
	}
	if _, err := os.Stat(hostDir); err != nil {
		t.Errorf("the hostPath directory was touched: %v", err)
	}
}
