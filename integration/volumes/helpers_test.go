package volumes_test

// The helpers every test file of this package uses. The package runs ONE
// `berth server` and ONE `berth agent --server` (node "e2e-node"), started
// by the first test that asks for them and stopped by TestNothingLeftMounted,
// the package's last test. Tests run one at a time: do not call t.Parallel
// (TestNothingLeftMounted is the package's only parallel test, which is
// what makes it run after all the others).
//
//	c := cluster(t)                          // the shared *harness.Cluster (c.Client, c.MustKubectl, c.AgentRootDir, …)
//	ns := newNamespace(t)                    // a namespace of the test's own; its pods are deleted, and
//	                                         // waited for, when the test ends
//	apply(t, ns, yaml)                       // kubectl apply -n ns -f - (configMaps, secrets, …)
//	pod := runPod(t, ns, yaml)               // create a pod from YAML, wait until all its containers run
//	pod := createPod(t, ns, yaml)            // create a pod, do not wait (pods that must not start)
//	out := execIn(t, ns, pod.Name, "c", "cat", "/etc/x")  // kubectl exec; fails the test on error
//	out, err := tryExec(t, ns, pod.Name, "c", cmd...)     // the same, returning stdout+stderr and the error
//	ev := waitEvent(t, ns, pod.Name, "FailedMount")        // the first event of the pod with that reason
//	waitContainerCreating(t, ns, pod.Name)   // until the pod is Pending, its containers waiting in ContainerCreating
//	waitFor(t, timeout, what, cond)          // harness.WaitFor
//	mountsUnder(t, dir)                      // the host's mount points at or below dir
//	podDir(t, pod)                           // the pod's directory under the agent's root dir
//	restartAgent(t, while...)                // stop the shared agent, run while, start it again on the same dirs
//	getPod(t, ns, name); events(t, ns, name); describe(t, pod)  // the pod, its events, both as one line for messages
//
// Pods created by createPod and runPod get automountServiceAccountToken:
// false unless their YAML sets it, so a test's pod has only the volumes it
// declares. Every image is nodeenv's busybox (busyboxImage(t)); the
// container command sleeper runs until SIGTERM and stops at once on it.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/yaml"

	"berth/integration/harness"
	"berth/integration/nodeenv"
	"berth/internal/mountinfo"
)

// podTimeout bounds a pod's start and its deletion.
const podTimeout = 2 * time.Minute

// shared is the package's cluster: started by the first test that asks,
// stopped by TestNothingLeftMounted (stopShared).
var shared struct {
	mu  sync.Mutex
	c   *harness.Cluster
	err error // the start failed
	tb  *packageTB
	// cgroupRoot is the agent's --cgroup-root, reused by restartAgent.
	cgroupRoot string
}

// cluster returns the package's server and agent, starting them on the
// first call; the agent is Ready when it returns. A failed start fails
// every test that asks.
func cluster(t *testing.T) *harness.Cluster {
	t.Helper()
	nodeenv.Require(t)
	harness.RequireKubectl(t)
	shared.mu.Lock()
	if shared.c == nil && shared.err == nil {
		startShared()
		if !lastTestSelected() {
			// -run (or -skip) leaves TestNothingLeftMounted out: stop the
			// processes when this test ends, before nodeenv stops the
			// runtime under them; the next test starts new ones.
			t.Cleanup(stopShared)
		}
	}
	c, err := shared.c, shared.err
	shared.mu.Unlock()
	if err != nil {
		t.Fatalf("the package's server and agent did not start: %v", err)
	}
	if _, seen := logsAgentOnFailure.LoadOrStore(t, true); !seen {
		t.Cleanup(func() {
			logsAgentOnFailure.Delete(t)
			if t.Failed() {
				t.Logf("--- berth agent log (tail) ---\n%s", tail(c.Agent.Log(), 30000))
			}
		})
	}
	return c
}

// logsAgentOnFailure holds the tests that log the agent's output if they fail.
var logsAgentOnFailure sync.Map

func startShared() {
	tb := &packageTB{}
	shared.tb = tb
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(abort)
			if !ok {
				panic(r)
			}
			shared.err = errors.New(a.msg)
		}
	}()
	env := nodeenv.Current()
	shared.cgroupRoot = "/berth-" + env.BridgeName
	c := harness.StartCluster(tb, harness.ClusterOptions{})
	harness.WaitFor(tb, 90*time.Second, "node "+c.Node+" Ready", func() (bool, string) {
		if c.Agent.Exited() {
			tb.Fatalf("the agent exited:\n%s", tail(c.Agent.Log(), 20000))
		}
		n, err := c.Client.CoreV1().Nodes().Get(context.Background(), c.Node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady {
				return cond.Status == v1.ConditionTrue, cond.Reason + ": " + cond.Message
			}
		}
		return false, "no Ready condition"
	})
	shared.c = c
}

// lastTestSelected reports whether -test.run and -test.skip select
// TestNothingLeftMounted, which stops the shared processes.
func lastTestSelected() bool {
	const last = "TestNothingLeftMounted"
	matches := func(flagName string) (set, match bool) {
		f := flag.Lookup(flagName)
		if f == nil || f.Value.String() == "" {
			return false, false
		}
		re, err := regexp.Compile(strings.Split(f.Value.String(), "/")[0])
		return true, err != nil || re.MatchString(last)
	}
	if set, match := matches("test.run"); set && !match {
		return false
	}
	if set, match := matches("test.skip"); set && match {
		return false
	}
	return true
}

// stopShared stops the shared processes and removes their directories
// (the cleanups the harness registered); a later cluster call (go test
// -count 2) starts new ones.
func stopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.tb != nil {
		shared.tb.runCleanups()
	}
	shared.c, shared.err, shared.tb = nil, nil, nil
}

// restartAgent stops the shared agent (SIGTERM), runs the while funcs (what
// happens while the agent is down), and starts a new agent on the same root
// dir, cgroup root and manifest dir; it returns once the new agent serves
// its API. The pods keep running meanwhile.
func restartAgent(t *testing.T, while ...func()) {
	t.Helper()
	c := cluster(t)
	c.Agent.Stop()
	if !c.Agent.Exited() {
		t.Fatal("the agent did not exit")
	}
	for _, f := range while {
		f()
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				a, ok := r.(abort)
				if !ok {
					panic(r)
				}
				t.Fatalf("restart the agent: %s", a.msg)
			}
		}()
		c.Agent, c.KubeletPort = c.StartAgent(shared.tb, c.Env, c.Node, c.AgentRootDir, shared.cgroupRoot,
			"--pod-manifest-path", c.Manifests, "--manifest-rescan", "2s")
	}()
	waitFor(t, 90*time.Second, "the restarted agent to serve its API", func() (bool, string) {
		if c.Agent.Exited() {
			t.Fatalf("the restarted agent exited:\n%s", tail(c.Agent.Log(), 20000))
		}
		return strings.Contains(c.Agent.Log(), "serving the agent API"), ""
	})
}

// sleeper is a container command that runs until the container is
// stopped, and stops at once on SIGTERM.
const sleeper = `["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]`

// busyboxImage is the environment's busybox image.
func busyboxImage(t *testing.T) string {
	t.Helper()
	nodeenv.Require(t)
	return nodeenv.Current().BusyboxImage
}

var nsInvalid = regexp.MustCompile(`[^a-z0-9-]+`)

// newNamespace creates a namespace named after the test; when the test
// ends, its pods are deleted and waited for, so their volumes are torn down
// before the next test starts.
func newNamespace(t *testing.T) string {
	t.Helper()
	c := cluster(t)
	name := strings.Trim(nsInvalid.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = strings.Trim(name[:50], "-")
	}
	base := name
	for i := 2; ; i++ {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := c.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsAlreadyExists(err) || i > 100 {
			t.Fatalf("create namespace %s: %v", name, err)
		}
		name = fmt.Sprintf("%s-%d", base, i) // a test run twice (-count) or a long shared prefix
	}
	t.Cleanup(func() { deletePods(t, c, name) })
	return name
}

// deletePods deletes every pod of ns and waits until they are gone.
func deletePods(t *testing.T, c *harness.Cluster, ns string) {
	t.Helper()
	ctx := context.Background()
	pods := c.Client.CoreV1().Pods(ns)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Errorf("delete the pods of %s: %v", ns, err)
		return
	}
	waitFor(t, podTimeout, "the pods of "+ns+" to be gone", func() (bool, string) {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		return len(list.Items) == 0, strings.Join(names, ", ")
	})
}

// apply runs `kubectl apply -n ns -f -` with manifest.
func apply(t *testing.T, ns, manifest string) {
	t.Helper()
	cluster(t).MustKubectl(t, manifest, "apply", "-n", ns, "-f", "-")
}

// createPod creates the pod of manifest (YAML or JSON) in ns through the
// API and returns it as created; automountServiceAccountToken defaults to
// false.
func createPod(t *testing.T, ns, manifest string) *v1.Pod {
	t.Helper()
	c := cluster(t)
	var pod v1.Pod
	if err := yaml.UnmarshalStrict([]byte(manifest), &pod); err != nil {
		t.Fatalf("pod manifest: %v\n%s", err, manifest)
	}
	pod.Namespace = ns
	if pod.Spec.AutomountServiceAccountToken == nil {
		automount := false
		pod.Spec.AutomountServiceAccountToken = &automount
	}
	created, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), &pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, pod.Name, err)
	}
	return created
}

// runPod creates the pod of manifest in ns and waits until every container
// of it runs; it returns the pod as it is then.
func runPod(t *testing.T, ns, manifest string) *v1.Pod {
	t.Helper()
	p := createPod(t, ns, manifest)
	return waitRunning(t, ns, p.Name)
}

// waitRunning waits until every container of the pod runs.
func waitRunning(t *testing.T, ns, name string) *v1.Pod {
	t.Helper()
	c := cluster(t)
	var pod *v1.Pod
	waitFor(t, podTimeout, "pod "+ns+"/"+name+" to run", func() (bool, string) {
		p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
			return false, describe(t, p)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil {
				return false, describe(t, p)
			}
		}
		return true, ""
	})
	return pod
}

// describe is a pod's phase, container states and events, for messages.
func describe(t *testing.T, p *v1.Pod) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, "; %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Terminated != nil:
			fmt.Fprintf(&b, "; %s terminated: %s (%d) %s", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.State.Terminated.Message)
		case cs.State.Running != nil:
			fmt.Fprintf(&b, "; %s running", cs.Name)
		}
	}
	for _, e := range events(t, p.Namespace, p.Name) {
		fmt.Fprintf(&b, "; event %s %s: %s", e.Type, e.Reason, e.Message)
	}
	return b.String()
}

// waitContainerCreating waits until the pod's status shows it Pending with
// every container waiting in ContainerCreating (its volumes not set up).
func waitContainerCreating(t *testing.T, ns, name string) {
	t.Helper()
	waitFor(t, podTimeout, "pod "+ns+"/"+name+" in ContainerCreating", func() (bool, string) {
		p := getPod(t, ns, name)
		if p.Status.Phase != v1.PodPending || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
			return false, describe(t, p)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
				return false, describe(t, p)
			}
		}
		return true, ""
	})
}

// events lists the events about pod ns/name.
func events(t *testing.T, ns, name string) []v1.Event {
	t.Helper()
	list, err := cluster(t).Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		return nil
	}
	return list.Items
}

// waitEvent waits for an event about pod ns/name with reason and returns it.
func waitEvent(t *testing.T, ns, name, reason string) v1.Event {
	t.Helper()
	return waitEventMatching(t, ns, name, reason, func(string) bool { return true })
}

// waitEventMatching waits for an event of the pod with reason whose message
// match accepts. A pod's first FailedMount for an object it names that does
// not exist may be the Node authorizer's refusal (its graph has not seen
// the pod yet); the retry then gives the error the test expects.
func waitEventMatching(t *testing.T, ns, name, reason string, match func(message string) bool) v1.Event {
	t.Helper()
	var found v1.Event
	waitFor(t, podTimeout, fmt.Sprintf("a %s event of pod %s/%s", reason, ns, name), func() (bool, string) {
		evs := events(t, ns, name)
		i := slices.IndexFunc(evs, func(e v1.Event) bool { return e.Reason == reason && match(e.Message) })
		if i < 0 {
			var seen []string
			for _, e := range evs {
				seen = append(seen, e.Reason+": "+e.Message)
			}
			return false, "events: " + strings.Join(seen, "; ")
		}
		found = evs[i]
		return true, ""
	})
	return found
}

// tryExec runs cmd in the container through kubectl exec: its stdout and
// stderr together, and the error.
func tryExec(t *testing.T, ns, pod, container string, cmd ...string) (string, error) {
	t.Helper()
	out, errOut, err := cluster(t).Kubectl(t, "", append([]string{"exec", "-n", ns, pod, "-c", container, "--"}, cmd...)...)
	return out + errOut, err
}

// execIn runs cmd in the container through kubectl exec and returns its
// stdout; an error fails the test.
func execIn(t *testing.T, ns, pod, container string, cmd ...string) string {
	t.Helper()
	out, errOut, err := cluster(t).Kubectl(t, "", append([]string{"exec", "-n", ns, pod, "-c", container, "--"}, cmd...)...)
	if err != nil {
		t.Fatalf("exec %v in %s/%s[%s]: %v\nstdout: %s\nstderr: %s", cmd, ns, pod, container, err, out, errOut)
	}
	return out
}

// waitFor polls cond until it holds (harness.WaitFor).
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	harness.WaitFor(t, timeout, what, cond)
}

// mountsUnder is the host's mount points at or below dir (this process's
// mount table), deepest first.
func mountsUnder(t testing.TB, dir string) []mountinfo.Mount {
	t.Helper()
	mounts, err := mountinfo.Read(mountinfo.SelfPath)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if resolved == "" {
		resolved = dir
	}
	return mountinfo.Under(mounts, resolved)
}

// podDir is the pod's directory under the agent's root dir.
func podDir(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	return filepath.Join(cluster(t).AgentRootDir, "pods", string(pod.UID))
}

// getPod reads the pod from the API.
func getPod(t *testing.T, ns, name string) *v1.Pod {
	t.Helper()
	p, err := cluster(t).Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// packageTB is the testing.TB the shared processes are started with: they
// live as long as the package's tests, not one test. Fatal and Skip abort
// the start (startShared turns that into shared.err); Cleanup collects what
// stopShared runs; TempDir makes directories in the nodeenv's dir, which
// the environment's Stop unmounts and removes even if stopShared never ran.
type packageTB struct {
	testing.TB // nil: only the methods below may be called

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// abort is what packageTB panics with on Fatal or Skip.
type abort struct{ msg string }

func (p *packageTB) Helper()      {}
func (p *packageTB) Name() string { return "integration/volumes (shared cluster)" }
func (p *packageTB) Fatal(args ...any) {
	p.fail()
	panic(abort{fmt.Sprint(args...)})
}
func (p *packageTB) Fatalf(format string, args ...any) {
	p.fail()
	panic(abort{fmt.Sprintf(format, args...)})
}
func (p *packageTB) FailNow()                          { p.Fatal("FailNow") }
func (p *packageTB) Skip(args ...any)                  { p.Fatal(append([]any{"skipped: "}, args...)...) }
func (p *packageTB) Skipf(format string, args ...any)  { p.Fatalf("skipped: "+format, args...) }
func (p *packageTB) Error(args ...any)                 { p.fail(); p.Log(args...) }
func (p *packageTB) Errorf(format string, args ...any) { p.fail(); p.Logf(format, args...) }
func (p *packageTB) Log(args ...any)                   { fmt.Fprintln(os.Stderr, args...) }
func (p *packageTB) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func (p *packageTB) fail() {
	p.mu.Lock()
	p.failed = true
	p.mu.Unlock()
}

func (p *packageTB) Failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

func (p *packageTB) Cleanup(f func()) {
	p.mu.Lock()
	p.cleanups = append(p.cleanups, f)
	p.mu.Unlock()
}

func (p *packageTB) TempDir() string {
	dir, err := os.MkdirTemp(nodeenv.Current().Dir, "volumes-")
	if err != nil {
		p.Fatalf("TempDir: %v", err)
	}
	p.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			p.Errorf("remove %s: %v", dir, err)
		}
	})
	return dir
}

// runCleanups runs the collected cleanups, last first, once each.
func (p *packageTB) runCleanups() {
	for {
		p.mu.Lock()
		if len(p.cleanups) == 0 {
			p.mu.Unlock()
			return
		}
		f := p.cleanups[len(p.cleanups)-1]
		p.cleanups = p.cleanups[:len(p.cleanups)-1]
		p.mu.Unlock()
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(abort); !ok {
						panic(r)
					}
				}
			}()
			f()
		}()
	}
}
