// Package agent_test runs `berth agent` as a process against a real
// containerd (one per package, started by nodeenv without a CNI config: the
// agent writes its own) and watches it from outside: through the CRI socket
// and the agent's read-only API (GET /pods). Probes and lifecycle hooks are
// checked the same way; gRPC probes run against grpchealth, a test gRPC
// health server built from ./grpchealth into a one-binary image pushed to
// the env's registry. Tests run one at a time — each agent owns every pod on
// the runtime — and each removes its pods before it ends.
package agent_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/integration/harness"
	"berth/integration/nodeenv"
)

func TestMain(m *testing.M) { harness.Main(m, nodeenv.Options{SkipCNIConfig: true}) }

// node is one agent's directories and settings; agents started from the
// same node share them (a restarted agent).
type node struct {
	t          testing.TB
	env        *nodeenv.Env
	manifests  string
	root       string
	logs       string
	cgroupRoot string
	port       int
	extraArgs  []string
	cri        *cri.Client
}

// agentProc is one running `berth agent`.
type agentProc struct{ *harness.Proc }

// newNode prepares directories for an agent; its cleanup removes every pod
// through the agent, then anything left through CRI, and the test's cgroups.
func newNode(t testing.TB, extraArgs ...string) *node {
	t.Helper()
	nodeenv.Require(t)
	env := nodeenv.Current()
	dir := t.TempDir()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	n := &node{
		t: t, env: env,
		manifests:  filepath.Join(dir, "manifests"),
		root:       filepath.Join(dir, "root"),
		logs:       filepath.Join(dir, "pods"),
		cgroupRoot: "/berth-itest-" + hex.EncodeToString(rnd[:]),
		port:       harness.FreePort(t),
		extraArgs:  extraArgs,
	}
	if err := os.MkdirAll(n.manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := cri.New(context.Background(), cri.Config{Endpoint: env.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	n.cri = c
	t.Cleanup(func() {
		n.forceRemovePods()
		n.removeCgroupRoot()
		c.Close()
	})
	return n
}

// start runs an agent for the node and stops it (SIGTERM) when the test ends.
func (n *node) start() *agentProc {
	t := n.t
	t.Helper()
	args := []string{"agent",
		"--pod-manifest-path", n.manifests,
		"--container-runtime-endpoint", n.env.Endpoint,
		"--root-dir", n.root,
		"--pod-cidr", n.env.PodCIDR,
		"--cni-conf-dir", n.env.CNIConfDir,
		"--cni-bin-dir", strings.Join(n.env.CNIBinDirs, ":"),
		"--cni-bridge", n.env.BridgeName,
		"--pod-log-dir", n.logs,
		"--node-name", "n1",
		"--node-ip", "127.0.0.1",
		"--address", "127.0.0.1",
		"--read-only-port", strconv.Itoa(n.port),
		"--cgroup-root", n.cgroupRoot,
		"--manifest-rescan", "2s",
		"--log-level", "debug",
		// As kind: no disk thresholds on the shared test machine's disk.
		"--eviction-hard", "memory.available<100Mi",
	}
	args = append(args, n.extraArgs...)
	proc, err := harness.Launch("berth agent", args...)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentProc{proc}
	t.Cleanup(func() {
		a.stop(t)
		if t.Failed() {
			t.Logf("agent log:\n%s", a.Log())
		}
	})
	eventually(t, time.Minute, "the agent's /healthz", func() (bool, string) {
		if a.Exited() {
			t.Fatalf("the agent exited:\n%s", a.Log())
		}
		resp, err := http.Get(n.url("/healthz"))
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return a
}

// stop ends the agent with SIGTERM (by PID) and waits for it; an agent
// that ignores SIGTERM for 30 s is killed and fails the test.
func (a *agentProc) stop(t testing.TB) {
	if !a.Stop() {
		t.Errorf("the agent ignored SIGTERM for 30 s; killed it")
	}
}

func (n *node) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", n.port, path) }

// write puts a manifest into the directory atomically (write, then rename).
func (n *node) write(name, content string) {
	n.t.Helper()
	tmp := filepath.Join(n.manifests, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(n.manifests, name)); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) remove(name string) {
	n.t.Helper()
	if err := os.Remove(filepath.Join(n.manifests, name)); err != nil {
		n.t.Fatal(err)
	}
}

// pods is GET /pods.
func (n *node) pods() ([]v1.Pod, error) {
	resp, err := http.Get(n.url("/pods"))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	if list.Kind != "PodList" || list.APIVersion != "v1" {
		return nil, fmt.Errorf("GET /pods: kind %q apiVersion %q", list.Kind, list.APIVersion)
	}
	return list.Items, nil
}

// pod is the named pod from GET /pods, or nil.
func (n *node) pod(name string) *v1.Pod {
	n.t.Helper()
	pods, err := n.pods()
	if err != nil {
		return nil
	}
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i]
		}
	}
	return nil
}

// waitPod polls GET /pods until cond holds for the named pod.
func (n *node) waitPod(name, what string, timeout time.Duration, cond func(p *v1.Pod) bool) *v1.Pod {
	n.t.Helper()
	var last *v1.Pod
	eventually(n.t, timeout, name+": "+what, func() (bool, string) {
		last = n.pod(name)
		if last == nil {
			return false, "not in GET /pods"
		}
		b, _ := json.Marshal(last.Status)
		return cond(last), string(b)
	})
	return last
}

// sandboxes and containers list the runtime's, optionally of one pod UID.
func (n *node) sandboxes(uid string) []*runtimeapi.PodSandbox {
	n.t.Helper()
	var f *runtimeapi.PodSandboxFilter
	if uid != "" {
		f = &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{cri.LabelPodUID: uid}}
	}
	sbs, err := n.cri.ListPodSandbox(context.Background(), f)
	if err != nil {
		n.t.Fatal(err)
	}
	return sbs
}

func (n *node) containers(uid string) []*runtimeapi.Container {
	n.t.Helper()
	var f *runtimeapi.ContainerFilter
	if uid != "" {
		f = &runtimeapi.ContainerFilter{LabelSelector: map[string]string{cri.LabelPodUID: uid}}
	}
	cs, err := n.cri.ListContainers(context.Background(), f)
	if err != nil {
		n.t.Fatal(err)
	}
	return cs
}

// removeAllAndWait deletes every manifest and waits until the agent has
// removed every pod: from the runtime, then from GET /pods.
func (n *node) removeAllAndWait() {
	n.t.Helper()
	entries, _ := os.ReadDir(n.manifests)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(n.manifests, e.Name()))
	}
	eventually(n.t, 2*time.Minute, "every pod removed by the agent", func() (bool, string) {
		sbs, cs := n.sandboxes(""), n.containers("")
		return len(sbs) == 0 && len(cs) == 0, fmt.Sprintf("%d sandboxes, %d containers", len(sbs), len(cs))
	})
	// A pod leaves GET /pods last, once its logs, files and cgroups are gone.
	eventually(n.t, time.Minute, "every pod gone from GET /pods", func() (bool, string) {
		pods, err := n.pods()
		return err == nil && len(pods) == 0, fmt.Sprintf("%d pods (%v)", len(pods), err)
	})
}

// forceRemovePods removes through CRI whatever a failed test left.
func (n *node) forceRemovePods() {
	ctx := context.Background()
	sbs, err := n.cri.ListPodSandbox(ctx, nil)
	if err != nil {
		n.t.Errorf("cleanup: %v", err)
		return
	}
	for _, s := range sbs {
		if err := n.cri.StopPodSandbox(ctx, s.GetId()); err != nil {
			n.t.Errorf("cleanup: %v", err)
		}
		if err := n.cri.RemovePodSandbox(ctx, s.GetId()); err != nil {
			n.t.Errorf("cleanup: %v", err)
		}
	}
}

// removeCgroupRoot removes the test's cgroup tree from every hierarchy.
func (n *node) removeCgroupRoot() {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		root := filepath.Join(h, n.cgroupRoot)
		var dirs []string
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			n.t.Errorf("cleanup: %v", err)
			continue
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				n.t.Errorf("cleanup: rmdir %s: %v", dirs[i], err)
			}
		}
	}
}

// podCgroups lists the pod-level cgroup directories of uid under the test's
// cgroup root, in any hierarchy.
func (n *node) podCgroups(uid string) []string {
	var found []string
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		for _, q := range []string{"", "burstable", "besteffort"} {
			p := filepath.Join(h, n.cgroupRoot, "kubepods", q, "pod"+uid)
			if _, err := os.Stat(p); err == nil {
				found = append(found, p)
			}
		}
	}
	return found
}

// eventually polls cond every 50 ms until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var detail string
	for {
		var ok bool
		if ok, detail = cond(); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, detail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// podManifest is a pod of busybox containers; each container is
// name=shell-command. Containers exit promptly on SIGTERM unless their
// command says otherwise.
func podManifest(env *nodeenv.Env, name string, extraSpec string, containers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: 5\n%s  containers:\n", name, extraSpec)
	for _, c := range containers {
		cname, cmd, _ := strings.Cut(c, "=")
		fmt.Fprintf(&b, "  - name: %s\n    image: %s\n    command: [\"sh\", \"-c\", %q]\n", cname, env.BusyboxImage, cmd)
	}
	return b.String()
}

// sleeper runs until SIGTERM.
const sleeper = "trap 'exit 0' TERM; while true; do sleep 0.2; done"

func containerStatus(p *v1.Pod, name string) v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name {
				return cs
			}
		}
	}
	return v1.ContainerStatus{}
}

func condition(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func running(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}
