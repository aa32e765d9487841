package nodeenv

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cni"
	"berth/internal/mountinfo"
)

// These tests start their own environment (one containerd for the package,
// as everywhere): they test Start and, above all, that Stop leaves nothing.

func TestEnvLifecycleLeavesNothingBehind(t *testing.T) {
	requirePrerequisites(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			env.printLog(os.Stderr)
			_ = env.Stop()
		}
	})
	t.Logf("nodeenv: %s (CRI %s) at %s", env.ContainerdVersion, env.criAPIVersion, env.Endpoint)

	// The environment as the contract describes it.
	if !strings.HasPrefix(env.ContainerdVersion, "containerd ") || env.criAPIVersion != "v1" {
		t.Errorf("version = %q, CRI %q", env.ContainerdVersion, env.criAPIVersion)
	}
	if env.Endpoint != "unix://"+filepath.Join(env.Dir, "containerd.sock") {
		t.Errorf("endpoint = %s", env.Endpoint)
	}
	_, podNet, err := net.ParseCIDR(env.PodCIDR)
	if err != nil || !strings.HasPrefix(env.PodCIDR, subnetPrefix) {
		t.Fatalf("pod CIDR %q: %v", env.PodCIDR, err)
	}
	if len(env.BridgeName) > 15 || env.BridgeName == "" {
		t.Errorf("bridge name %q", env.BridgeName)
	}
	if _, err := os.Stat(filepath.Join(env.CNIConfDir, cni.FileName)); err != nil {
		t.Errorf("conflist: %v", err)
	}
	for _, img := range []string{env.PauseImage, env.BusyboxImage} {
		if !strings.HasPrefix(img, env.Registry+"/") {
			t.Errorf("image %s not in the registry %s", img, env.Registry)
		}
	}
	if !strings.HasPrefix(env.AuthBusyboxImage, env.AuthRegistry+"/") || env.AuthUser == "" || env.AuthPassword == "" {
		t.Errorf("auth registry %s, image %s, user %q", env.AuthRegistry, env.AuthBusyboxImage, env.AuthUser)
	}
	resp, err := http.Get("http://" + env.AuthRegistry + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("auth registry answers %d without credentials", resp.StatusCode)
	}

	// Leave a running pod (sandbox + container) for Stop to clean up.
	rt := env.runtime
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "leftover", Namespace: "nodeenv", Uid: "nodeenv-uid-1"},
		LogDirectory: filepath.Join(env.Dir, "pods", "leftover"),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	st, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.PodSandboxId, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(st.Status.GetNetwork().GetIp())
	if ip == nil || !podNet.Contains(ip) {
		t.Fatalf("sandbox IP %q not in %s", st.Status.GetNetwork().GetIp(), env.PodCIDR)
	}
	netns := netnsPath(st.Info)
	if netns == "" {
		t.Fatalf("no netns path in the verbose status: %v", st.Info)
	}
	if _, err := os.Stat(netns); err != nil {
		t.Fatalf("sandbox netns: %v", err)
	}
	if _, err := netlink.LinkByName(env.BridgeName); err != nil {
		t.Fatalf("bridge %s after the first sandbox: %v", env.BridgeName, err)
	}
	if _, err := runtimeapi.NewImageServiceClient(env.conn).PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: env.BusyboxImage}}); err != nil {
		t.Fatalf("PullImage: %v", err)
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.PodSandboxId,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "sleeper"},
			Image:    &runtimeapi.ImageSpec{Image: env.BusyboxImage},
			Command:  []string{"sleep", "3600"},
			LogPath:  "sleeper.log",
			Linux:    &runtimeapi.LinuxContainerConfig{},
		},
		SandboxConfig: sbCfg,
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	shims := shimPIDs(env.socket)
	if len(shims) == 0 {
		t.Fatalf("no shim found for %s", env.socket)
	}
	mounts, _ := mountsUnder(env.Dir)
	if len(mounts) == 0 {
		t.Fatalf("no mounts under %s with a running container", env.Dir)
	}
	containerdPID := env.cmd.Process.Pid
	lockPath := env.slot.file.Name()

	stopped = true
	if err := env.Stop(); err != nil {
		env.printLog(os.Stderr)
		t.Fatalf("Stop: %v", err)
	}
	if err := env.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	// Nothing left on the host.
	// (An exited shim may linger as a zombie until the machine's init reaps
	// it; exited is what counts.)
	if alive(containerdPID) {
		t.Errorf("containerd %d still running", containerdPID)
	}
	for _, pid := range shims {
		if alive(pid) {
			t.Errorf("shim %d still running", pid)
		}
	}
	if left := shimPIDs(env.socket); len(left) > 0 {
		t.Errorf("shims left: %v", left)
	}
	if left, _ := mountsUnder(env.Dir); len(left) > 0 {
		t.Errorf("mounts left: %v", left)
	}
	if _, err := os.Stat(netns); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("netns %s left: %v", netns, err)
	}
	if _, err := netlink.LinkByName(env.BridgeName); err == nil {
		t.Errorf("bridge %s left", env.BridgeName)
	}
	if _, err := os.Stat(env.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir %s left: %v", env.Dir, err)
	}
	if _, err := http.Get("http://" + env.Registry + "/v2/"); err == nil {
		t.Errorf("registry %s still serving", env.Registry)
	}
	f, err := os.OpenFile(lockPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("subnet lock %s not released: %v", lockPath, err)
	} else {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
}

func TestSlotsAreExclusive(t *testing.T) {
	requirePrerequisites(t)
	a, err := claimSlot()
	if err != nil {
		t.Fatal(err)
	}
	defer a.release()
	b, err := claimSlot()
	if err != nil {
		t.Fatal(err)
	}
	defer b.release()
	if a.n == b.n || a.cidr == b.cidr || a.bridge == b.bridge {
		t.Fatalf("two live claims share a slot: %+v %+v", a, b)
	}
	for _, s := range []*slot{a, b} {
		if len(s.bridge) > 15 {
			t.Errorf("bridge name %q longer than 15", s.bridge)
		}
		if err := (cni.Config{NetworkName: "x", BridgeName: s.bridge, PodCIDRs: []string{s.cidr},
			BinDirs: []string{"/x"}, ConfDir: "/x", DataDir: "/x"}).Validate(); err != nil {
			t.Errorf("slot %d is not a valid network: %v", s.n, err)
		}
	}
}

func TestClaimCleansUpAfterACrashedInstance(t *testing.T) {
	requirePrerequisites(t)
	s, err := claimSlot()
	if err != nil {
		t.Fatal(err)
	}
	// What a crashed instance leaves: a dir with a mount in it, a bridge.
	dir, err := os.MkdirTemp("", "berth-nodeenv-crashed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mountinfo.UnmountAll(dir); _ = os.RemoveAll(dir) })
	mnt := filepath.Join(dir, "state", "shm")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: s.bridge}}
	if err := netlink.LinkAdd(br); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deleteLink(s.bridge) })
	if err := s.save(record{Dir: dir, Bridge: s.bridge, Socket: filepath.Join(dir, "containerd.sock")}); err != nil {
		t.Fatal(err)
	}
	// Crash: the lock goes with the process, the record stays.
	_ = s.file.Close()

	// The next instance to lock the slot cleans up. (Another package may
	// get there first; then it does the cleaning, which this test waits for.)
	f, err := os.OpenFile(s.file.Name(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	next := &slot{n: s.n, file: f, cidr: s.cidr, bridge: s.bridge}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		if err := next.cleanStale(); err != nil {
			t.Errorf("cleanStale: %v", err)
		}
		next.release()
	} else {
		f.Close()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, dirErr := os.Stat(dir)
		_, linkErr := netlink.LinkByName(s.bridge)
		if errors.Is(dirErr, os.ErrNotExist) && linkErr != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crashed instance's leftovers remain: dir %s (%v), bridge %s (%v)", dir, dirErr, s.bridge, linkErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports whether pid exists and has not exited.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st, _ := procState(pid)
	return st != "" && st != "Z"
}

// TestRecoverAfterACrashedTestProcess: a test binary killed mid-run (its
// containerd gets SIGTERM through Pdeathsig, Stop never runs) leaves
// sandboxes, netns, a bridge and its dir; the next environment to claim the
// slot removes them all, sandboxes through CRI.
func TestRecoverAfterACrashedTestProcess(t *testing.T) {
	requirePrerequisites(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	crashed := false
	t.Cleanup(func() {
		if !crashed {
			_ = env.Stop()
		}
	})
	sb, err := env.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "orphan", Namespace: "nodeenv", Uid: "nodeenv-uid-2"},
		LogDirectory: filepath.Join(env.Dir, "pods", "orphan"),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	st, err := env.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.PodSandboxId, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	netns := netnsPath(st.Info)
	if netns == "" {
		t.Fatal("no netns path in the verbose status")
	}

	// The crash: containerd gets SIGTERM, the lock goes with the process,
	// the record stays, nothing else is undone.
	crashed = true
	_ = env.conn.Close()
	_ = env.cmd.Process.Signal(syscall.SIGTERM)
	<-env.exited
	for _, r := range env.registries {
		_ = r.Close()
	}
	lockPath := env.slot.file.Name()
	_ = env.slot.file.Close()
	if _, err := os.Stat(netns); err != nil {
		t.Fatalf("the crash should leave the netns %s: %v", netns, err)
	}

	f, err := os.OpenFile(lockPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	next := &slot{file: f}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		if err := next.cleanStale(); err != nil {
			t.Errorf("cleanStale: %v", err)
		}
		next.release()
	} else {
		f.Close() // another package claimed the slot first and cleans it
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		if _, err := os.Stat(netns); err == nil {
			left = append(left, "netns "+netns)
		}
		if _, err := netlink.LinkByName(env.BridgeName); err == nil {
			left = append(left, "bridge "+env.BridgeName)
		}
		if _, err := os.Stat(env.Dir); err == nil {
			left = append(left, "dir "+env.Dir)
		}
		if pids := shimPIDs(env.socket); len(pids) > 0 {
			left = append(left, "shims")
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left after recovery: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
