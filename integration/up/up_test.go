// Package up tests `berth up` as a process, from outside: the kubeconfig it
// writes, real kubectl against its control plane, a static pod pulled
// through a registry mirror from the registries file and run on its own
// containerd (seen through the CRI socket), pods created with kubectl
// apply that the scheduler puts on the joined agent's node (Running with an
// IP from --pod-cidr, kubectl logs, kubectl delete → gone from containerd),
// and a SIGTERM after which nothing is left: no containerd or shim process,
// no mount under the data dir, no pod bridge.
package up

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cri"
	"berth/integration/nodeenv"
	"berth/internal/prereq"
	"berth/internal/testimages"
)

const kubectl = "/usr/bin/kubectl"

// requirePrerequisites fails under CI=true and skips otherwise when the
// machine cannot run a cluster.
func requirePrerequisites(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the berth up integration test")
	}
	err := nodeenv.CheckPrerequisites()
	if _, kerr := os.Stat(kubectl); kerr != nil {
		err = errors.Join(err, fmt.Errorf("%s (kubectl)", kubectl))
	}
	if err == nil {
		return
	}
	prereq.Missing(t, "berth up needs: %v", err)
}

// binaries returns berth ($BERTH_BIN or built) and the static pause
// binary (beside it, else built with CGO_ENABLED=0).
func binaries(t *testing.T) (berth, pause string) {
	t.Helper()
	dir := t.TempDir()
	build := func(out, pkg string, env ...string) {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Env = append(os.Environ(), env...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	berth = os.Getenv("BERTH_BIN")
	if berth == "" {
		berth = filepath.Join(dir, "berth")
		build(berth, "berth/cmd/berth")
	}
	pause = filepath.Join(filepath.Dir(berth), "pause")
	if _, err := os.Stat(pause); err != nil {
		pause = filepath.Join(dir, "pause")
		build(pause, "berth/cmd/pause", "CGO_ENABLED=0")
	}
	return berth, pause
}

// upLockDir holds this package's subnet locks. Its subnets are
// 10.223.N.0/24 and its bridges "berthupN": apart from nodeenv's
// 10.222.N.0/24 and "berthtestN".
const upLockDir = "/run/berth-test"

// claimSubnet locks a free N for the test's life.
func claimSubnet(t *testing.T) (bridge, cidr string) {
	t.Helper()
	if err := os.MkdirAll(upLockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 254; n++ {
		f, err := os.OpenFile(filepath.Join(upLockDir, fmt.Sprintf("up-subnet-%d.lock", n)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		bridge = "berthup" + strconv.Itoa(n)
		if _, err := netlink.LinkByName(bridge); err == nil {
			f.Close() // someone's bridge: not ours to use or delete
			continue
		}
		t.Cleanup(func() { f.Close() })
		return bridge, fmt.Sprintf("10.223.%d.0/24", n)
	}
	t.Fatal("no free 10.223.N.0/24 slot")
	return "", ""
}

// TestUpRunsAClusterAndLeavesNothingBehind is the whole life of `berth up`.
func TestUpRunsAClusterAndLeavesNothingBehind(t *testing.T) {
	requirePrerequisites(t)
	berth, pause := binaries(t)
	bridge, cidr := claimSubnet(t)
	dataDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// A registry standing in for docker.io, reached only through the
	// registries file's mirror: the node has no other network.
	busybox, err := testimages.BusyboxImage(nodeenv.BusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	mirror, err := testimages.StartRegistry(testimages.RegistryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mirror.Close() })
	if _, err := mirror.Push(ctx, "berth/busybox:1", busybox); err != nil {
		t.Fatal(err)
	}
	registries := filepath.Join(t.TempDir(), "registries.yaml")
	if err := os.WriteFile(registries, []byte(fmt.Sprintf("mirrors:\n  docker.io:\n    endpoint:\n      - \"http://%s\"\n", mirror.Host())), 0o600); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr lockedBuffer
	cmd := exec.Command(berth, "up",
		"--data-dir", dataDir, "--listen", "127.0.0.1:0",
		"--cni-bridge", bridge, "--pod-cidr", cidr, "--read-only-port", "0",
		"--kubelet-port", strconv.Itoa(freePort(t)),
		"--registries", registries, "--pause-binary", pause)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default: // the test failed half-way: kill it, its containerd gets SIGTERM by Pdeathsig
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("berth up stdout:\n%s\nstderr (last 60 lines):\n%s", stdout.String(), lastLines(stderr.String(), 60))
		}
	})

	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	wantLine := "use: kubectl --kubeconfig " + kubeconfig + " get pods"
	poll(t, ctx, exited, "berth up to print the kubectl line", func() bool { return strings.Contains(stdout.String(), wantLine) })
	if want := "pod CIDR " + cidr; !strings.Contains(stdout.String(), want) {
		t.Errorf("berth up does not print %q:\n%s", want, stdout.String())
	}

	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "ns", "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get ns: %v\n%s", err, out)
	}
	for _, ns := range []string{"namespace/default", "namespace/kube-system"} {
		if !strings.Contains(string(out), ns) {
			t.Errorf("kubectl get ns lacks %s:\n%s", ns, out)
		}
	}

	// A static pod whose image comes from "docker.io" — the mirror.
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: sleeper, namespace: default}
spec:
  containers:
  - name: sleeper
    image: docker.io/berth/busybox:1
    command: ["sleep", "3600"]
`
	if err := os.WriteFile(filepath.Join(dataDir, "manifests", "sleeper.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dataDir, "containerd", "containerd.sock")
	client, err := cri.New(ctx, cri.Config{Endpoint: "unix://" + socket})
	if err != nil {
		t.Fatalf("berth up's containerd: %v", err)
	}
	defer client.Close()
	poll(t, ctx, exited, "the static pod's container to run", func() bool {
		cs, err := client.ListContainers(ctx, &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{"io.kubernetes.container.name": "sleeper"},
		})
		return err == nil && len(cs) == 1
	})
	if _, err := netlink.LinkByName(bridge); err != nil {
		t.Errorf("the pod bridge %s does not exist while a pod runs: %v", bridge, err)
	}
	if len(processesMentioning(socket)) == 0 {
		t.Fatal("no process serves the containerd socket while berth up runs")
	}

	// Pods through the API, with no nodeName: the scheduler binds them to
	// the joined agent's node.
	kc := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	podManifest := func(name string, command string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: docker.io/berth/busybox:1
    command: ["sh", "-c", %q]
`, name, command)
	}
	apply := filepath.Join(t.TempDir(), "pods.yaml")
	pods := podManifest("api-sleeper", "sleep 3600") + "---\n" + podManifest("api-echo", "echo hello from berth up; sleep 3600")
	if err := os.WriteFile(apply, []byte(pods), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kc("apply", "-f", apply); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	podNet := netip.MustParsePrefix(cidr)
	for _, name := range []string{"api-sleeper", "api-echo"} {
		var last string
		poll(t, ctx, exited, "pod "+name+" to be Running with an IP", func() bool {
			out, err := kc("get", "pod", name, "-o", "jsonpath={.status.phase} {.status.podIP} {.spec.nodeName}")
			last = out
			f := strings.Fields(out)
			return err == nil && len(f) == 3 && f[0] == "Running"
		})
		f := strings.Fields(last)
		ip, err := netip.ParseAddr(f[1])
		if err != nil || !podNet.Contains(ip) || ip == podNet.Addr() {
			t.Errorf("pod %s has IP %q, want a host address of --pod-cidr %s", name, f[1], cidr)
		}
		if f[2] == "" {
			t.Errorf("pod %s has no nodeName", name)
		}
	}
	var logs string
	poll(t, ctx, exited, "kubectl logs api-echo to show its line", func() bool {
		out, err := kc("logs", "api-echo")
		logs = out
		return err == nil && strings.Contains(out, "hello from berth up")
	})
	if strings.TrimSpace(logs) != "hello from berth up" {
		t.Errorf("kubectl logs api-echo = %q, want exactly the echoed line", logs)
	}
	if out, err := kc("delete", "pod", "api-sleeper", "--wait=true"); err != nil {
		t.Fatalf("kubectl delete pod: %v\n%s", err, out)
	}
	podLabel := map[string]string{"io.kubernetes.pod.name": "api-sleeper", "io.kubernetes.pod.namespace": "default"}
	poll(t, ctx, exited, "the deleted pod's containers and sandbox to leave containerd", func() bool {
		cs, err := client.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: podLabel})
		if err != nil || len(cs) > 0 {
			return false
		}
		ss, err := client.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: podLabel})
		return err == nil && len(ss) == 0
	})
	if out, err := kc("get", "pod", "api-sleeper"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("kubectl get pod api-sleeper after delete: %v\n%s", err, out)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("berth up did not exit after SIGTERM")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("berth up exited %d after SIGTERM, want 0", code)
	}
	if !strings.Contains(stdout.String(), "berth up: stopped") {
		t.Errorf("berth up did not report a clean stop:\n%s", stdout.String())
	}
	if pids := processesMentioning(socket); len(pids) > 0 {
		t.Errorf("processes still serving berth up's containerd (containerd, shims): %v", pids)
	}
	if pids := processesMentioning(dataDir); len(pids) > 0 {
		t.Errorf("processes still naming the data dir: %v", pids)
	}
	if mounts := mountsUnder(t, dataDir); len(mounts) > 0 {
		t.Errorf("still mounted under the data dir: %v", mounts)
	}
	if _, err := netlink.LinkByName(bridge); err == nil {
		t.Errorf("the pod bridge %s is still there", bridge)
	}
}

// freePort returns a TCP port free on this machine right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// poll checks cond every 100 ms until it holds; berth up exiting or ctx
// ending first fails the test.
func poll(t *testing.T, ctx context.Context, exited <-chan struct{}, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-exited:
			t.Fatalf("berth up exited while waiting for %s", what)
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// processesMentioning lists the PIDs whose command line contains s.
func processesMentioning(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lockedBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
