package nodeenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cni"
	"berth/internal/containerd"
	"berth/internal/mountinfo"
	"berth/internal/testimages"
)

// Env is one running, isolated containerd with its network and registries.
type Env struct {
	// Endpoint is containerd's CRI socket, "unix:///…/containerd.sock".
	Endpoint string
	// ContainerdVersion is what containerd answered to the CRI Version call,
	// e.g. "containerd 1.6.20~ds1".
	ContainerdVersion string
	// CNIConfDir is containerd's CNI conf dir (holding berth's conflist
	// unless Options.SkipCNIConfig); CNIBinDirs its plugin dirs.
	CNIConfDir string
	CNIBinDirs []string
	// BridgeName, PodCIDR and NetworkName are this instance's pod network:
	// unique among the environments running on the machine.
	BridgeName, PodCIDR, NetworkName string
	// CNIDataDir is host-local's allocation dir for this instance.
	CNIDataDir string
	// Registry ("127.0.0.1:PORT") serves the images anonymously.
	Registry string
	// AuthRegistry ("127.0.0.1:PORT") serves BusyboxImage's repository and tag
	// only with HTTP basic auth as AuthUser / AuthPassword.
	AuthRegistry           string
	AuthUser, AuthPassword string
	// PauseImage is in Registry and is containerd's sandbox_image.
	PauseImage string
	// BusyboxImage is in Registry; AuthBusyboxImage is the same image in
	// AuthRegistry. sh, httpd, nc, wget, sleep and more (testimages.BusyboxApplets).
	BusyboxImage, AuthBusyboxImage string
	// Dir is the instance's scratch dir (containerd root, state, socket,
	// config, log); Stop removes it.
	Dir string

	criAPIVersion string
	socket        string
	logPath       string
	slot          *slot
	registries    []*testimages.Registry
	cmd           *exec.Cmd
	exited        chan struct{} // closed when containerd has exited and been reaped
	conn          *grpc.ClientConn
	runtime       runtimeapi.RuntimeServiceClient

	stopOnce sync.Once
	stopErr  error
}

// Image repositories and tags the environment pushes.
const (
	pauseRepo   = "berth/pause:1"
	busyboxRepo = "berth/busybox:1"
)

// startTimeout bounds Start: building images, containerd coming up.
const startTimeout = 2 * time.Minute

// Start builds and starts an environment. On error everything it had set up
// is torn down again. Most callers want Main instead.
func Start(ctx context.Context, opts Options) (env *Env, err error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "berth-nodeenv-")
	if err != nil {
		return nil, fmt.Errorf("nodeenv: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("nodeenv: %w", err)
	}
	e := &Env{Dir: dir, socket: filepath.Join(dir, "containerd.sock"), logPath: filepath.Join(dir, "containerd.log")}
	e.Endpoint = "unix://" + e.socket
	defer func() {
		if err != nil {
			log := e.logTail(60)
			if stopErr := e.Stop(); stopErr != nil {
				err = fmt.Errorf("%w (and cleaning up: %v)", err, stopErr)
			}
			if log != "" {
				err = fmt.Errorf("%w\ncontainerd log (last lines):\n%s", err, log)
			}
			env = nil
		}
	}()

	if e.slot, err = claimSlot(); err != nil {
		return nil, fmt.Errorf("nodeenv: %w", err)
	}
	e.BridgeName, e.PodCIDR = e.slot.bridge, e.slot.cidr
	e.NetworkName = fmt.Sprintf("berth-test-%d", e.slot.n)
	if err := e.slot.save(record{Dir: dir, Bridge: e.BridgeName, Socket: e.socket}); err != nil {
		return nil, fmt.Errorf("nodeenv: record slot: %w", err)
	}

	if err := e.startRegistries(ctx); err != nil {
		return nil, fmt.Errorf("nodeenv: images: %w", err)
	}

	e.CNIConfDir = filepath.Join(dir, "net.d")
	e.CNIBinDirs = []string{CNIBinDir}
	e.CNIDataDir = filepath.Join(dir, "cni-ipam")
	netCfg := cni.Config{
		NetworkName: e.NetworkName, BridgeName: e.BridgeName, PodCIDRs: []string{e.PodCIDR},
		BinDirs: e.CNIBinDirs, ConfDir: e.CNIConfDir, DataDir: e.CNIDataDir,
	}
	if err := cni.Check(ctx, netCfg); err != nil {
		return nil, fmt.Errorf("nodeenv: %w", err)
	}
	if err := os.MkdirAll(e.CNIConfDir, 0o755); err != nil {
		return nil, fmt.Errorf("nodeenv: %w", err)
	}
	if !opts.SkipCNIConfig {
		if _, err := cni.Write(netCfg); err != nil {
			return nil, fmt.Errorf("nodeenv: %w", err)
		}
	}

	if err := e.startContainerd(); err != nil {
		return nil, fmt.Errorf("nodeenv: containerd: %w", err)
	}
	if err := e.waitReady(ctx, !opts.SkipCNIConfig); err != nil {
		return nil, fmt.Errorf("nodeenv: containerd: %w", err)
	}
	return e, nil
}

// startRegistries builds the images and serves them: pause and busybox
// anonymously, busybox again behind basic auth.
func (e *Env) startRegistries(ctx context.Context) error {
	pauseBin, err := testimages.BuildPause(ctx, "")
	if err != nil {
		return err
	}
	pause, err := testimages.PauseImage(pauseBin)
	if err != nil {
		return err
	}
	busybox, err := testimages.BusyboxImage(BusyboxPath)
	if err != nil {
		return err
	}
	anon, err := testimages.StartRegistry(testimages.RegistryConfig{})
	if err != nil {
		return err
	}
	e.registries = append(e.registries, anon)
	password := make([]byte, 12)
	if _, err := rand.Read(password); err != nil {
		return err
	}
	e.AuthUser, e.AuthPassword = "berth-puller", hex.EncodeToString(password)
	auth, err := testimages.StartRegistry(testimages.RegistryConfig{
		Username: e.AuthUser, Password: e.AuthPassword, Realm: "berth-nodeenv",
	})
	if err != nil {
		return err
	}
	e.registries = append(e.registries, auth)
	e.Registry, e.AuthRegistry = anon.Host(), auth.Host()
	if e.PauseImage, err = anon.Push(ctx, pauseRepo, pause); err != nil {
		return err
	}
	if e.BusyboxImage, err = anon.Push(ctx, busyboxRepo, busybox); err != nil {
		return err
	}
	if e.AuthBusyboxImage, err = auth.Push(ctx, busyboxRepo, busybox); err != nil {
		return err
	}
	return nil
}

func (e *Env) startContainerd() error {
	if err := containerd.EnsureNetnsMount(); err != nil {
		return err
	}
	cfgPath, err := e.writeContainerdConfig()
	if err != nil {
		return err
	}
	return e.launchRecorded(cfgPath)
}

// launchRecorded launches containerd and records its PID in the slot, for
// recoverCrashed.
func (e *Env) launchRecorded(cfgPath string) error {
	if err := e.launch(cfgPath); err != nil {
		return err
	}
	return e.slot.save(record{Dir: e.Dir, Bridge: e.BridgeName, Socket: e.socket, ContainerdPID: e.cmd.Process.Pid})
}

// launch starts containerd with the config at cfgPath, logging to e.logPath.
func (e *Env) launch(cfgPath string) error {
	bin, err := containerd.LookPath("containerd")
	if err != nil {
		return fmt.Errorf("containerd binary: %w", err)
	}
	logFile, err := os.OpenFile(e.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child keeps its own copy
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Dir = e.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "PATH="+containerd.SearchPath())
	// Own process group: a terminal's ^C reaches the test, which stops the
	// environment in order; SIGTERM if the test process dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	e.cmd = cmd
	e.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(e.exited)
	}()
	return nil
}

// recoverCrashed cleans up after an environment whose process died without
// Stop (recorded in its slot as r). If its directory still holds the
// containerd config, containerd is started once more on it, so that its
// sandboxes are removed through CRI (CNI DEL, netns, shims) as Stop would;
// then Stop's host cleanup runs on what the record names.
func recoverCrashed(r record) error {
	if r.Dir == "" || r.Socket == "" {
		return nil
	}
	e := &Env{Dir: r.Dir, socket: r.Socket, logPath: filepath.Join(r.Dir, "containerd-recover.log"), BridgeName: r.Bridge}
	e.Endpoint = "unix://" + r.Socket
	if r.ContainerdPID > 0 && processMentions(r.ContainerdPID, r.Dir) {
		_ = syscall.Kill(r.ContainerdPID, syscall.SIGKILL)
		waitGone(r.ContainerdPID)
	}
	cfgPath := filepath.Join(r.Dir, "config.toml")
	if _, err := os.Stat(cfgPath); err == nil {
		if err := e.launch(cfgPath); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := e.waitReady(ctx, false); err != nil {
				e.runtime = nil // not reachable: the host cleanup below is all we can do
			}
			cancel()
		}
	}
	return e.Stop()
}

// waitReady polls the CRI socket until Version answers and Status reports
// the runtime (and, with a CNI config, the network) ready.
func (e *Env) waitReady(ctx context.Context, wantNetwork bool) error {
	conn, err := grpc.NewClient(e.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	e.conn = conn
	e.runtime = runtimeapi.NewRuntimeServiceClient(conn)
	var last error
	for {
		select {
		case <-e.exited:
			return fmt.Errorf("exited while starting: %v", e.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("CRI not ready at %s: %w (last: %v)", e.Endpoint, ctx.Err(), last)
		default:
		}
		last = e.probe(ctx, wantNetwork)
		if last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *Env) probe(ctx context.Context, wantNetwork bool) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := e.runtime.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return err
	}
	st, err := e.runtime.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return err
	}
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == runtimeapi.RuntimeReady && !c.Status {
			return fmt.Errorf("runtime not ready: %s: %s", c.Reason, c.Message)
		}
		if wantNetwork && c.Type == runtimeapi.NetworkReady && !c.Status {
			return fmt.Errorf("network not ready: %s: %s", c.Reason, c.Message)
		}
	}
	e.ContainerdVersion = v.RuntimeName + " " + v.RuntimeVersion
	e.criAPIVersion = v.RuntimeApiVersion
	return nil
}

// Stop tears the environment down, in this order: every container and
// sandbox removed through CRI (so CNI DEL runs and shims exit), containerd
// SIGTERMed by PID (SIGKILL after a deadline) and reaped, any shim still
// serving it killed by PID, mounts under Dir unmounted deepest first, the
// sandboxes' netns removed if containerd left them, the bridge deleted, the
// registries closed, Dir removed and the subnet lock released. It is
// idempotent and reports everything it could not undo.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() { e.stopErr = e.stop() })
	return e.stopErr
}

func (e *Env) stop() error {
	var errs []error
	var netns []string
	if e.runtime != nil && e.running() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var err error
		netns, err = e.removeAllPods(ctx)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("remove pods through CRI: %w", err))
		}
	}
	if e.conn != nil {
		_ = e.conn.Close()
	}
	if e.cmd != nil {
		errs = append(errs, e.stopContainerd())
	}
	errs = append(errs, killShims(e.socket))
	errs = append(errs, mountinfo.UnmountAll(e.Dir))
	for _, p := range netns {
		errs = append(errs, removeNetns(p))
	}
	if e.BridgeName != "" {
		errs = append(errs, deleteLink(e.BridgeName))
	}
	for _, r := range e.registries {
		errs = append(errs, r.Close())
	}
	if err := os.RemoveAll(e.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", e.Dir, err))
	}
	if e.slot != nil {
		e.slot.release()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("nodeenv: stop: %w", err)
	}
	return nil
}

func (e *Env) running() bool {
	if e.exited == nil {
		return false
	}
	select {
	case <-e.exited:
		return false
	default:
		return true
	}
}

// removeAllPods stops and removes every container and sandbox, returning
// the sandboxes' netns paths.
func (e *Env) removeAllPods(ctx context.Context) ([]string, error) {
	var errs []error
	ignoreNotFound := func(err error) error {
		if status.Code(err) == codes.NotFound {
			return nil
		}
		return err
	}
	cs, err := e.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, err
	}
	for _, c := range cs.Containers {
		if _, err := e.runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.Id}); ignoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("stop container %s: %w", c.Id, err))
		}
		if _, err := e.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.Id}); ignoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %w", c.Id, err))
		}
	}
	ss, err := e.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	var netns []string
	for _, s := range ss.Items {
		if st, err := e.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: s.Id, Verbose: true}); err == nil {
			if p := netnsPath(st.Info); p != "" {
				netns = append(netns, p)
			}
		}
		if _, err := e.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id}); ignoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", s.Id, err))
		}
		if _, err := e.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id}); ignoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", s.Id, err))
		}
	}
	return netns, errors.Join(errs...)
}

// netnsPath digs the sandbox's network namespace path out of containerd's
// verbose PodSandboxStatus info.
func netnsPath(info map[string]string) string {
	var v struct {
		NetNSPath   string `json:"netNamespacePath"`
		RuntimeSpec struct {
			Linux struct {
				Namespaces []struct {
					Type string `json:"type"`
					Path string `json:"path"`
				} `json:"namespaces"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(info["info"]), &v); err != nil {
		return ""
	}
	if v.NetNSPath != "" {
		return v.NetNSPath
	}
	for _, ns := range v.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" {
			return ns.Path
		}
	}
	return ""
}

// stopContainerd sends SIGTERM by PID, SIGKILL after 15 s, and waits.
func (e *Env) stopContainerd() error {
	if !e.running() {
		return nil
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
		return nil
	case <-time.After(15 * time.Second):
	}
	_ = e.cmd.Process.Kill()
	select {
	case <-e.exited:
		return fmt.Errorf("containerd (pid %d) ignored SIGTERM for 15s and was killed", e.cmd.Process.Pid)
	case <-time.After(15 * time.Second):
		return fmt.Errorf("containerd (pid %d) did not exit after SIGKILL", e.cmd.Process.Pid)
	}
}

// logTail returns the last n lines of containerd's log.
func (e *Env) logTail(n int) string { return containerd.LogTail(e.logPath, n) }

// printLog writes the tail of containerd's log to w, for failed runs.
func (e *Env) printLog(w io.Writer) {
	if tail := e.logTail(300); tail != "" {
		fmt.Fprintf(w, "nodeenv: containerd log %s (last 300 lines):\n%s\n", e.logPath, tail)
	}
}
