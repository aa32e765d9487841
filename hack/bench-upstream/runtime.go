package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/cni"
	"berth/cri"
	"berth/internal/containerd"
	"berth/internal/testimages"
	"berth/up"
)

// runtimeEnv is the one containerd every side of the pod benchmarks runs
// on, with the pause and busybox images served from a registry on
// 127.0.0.1 and already pulled, and the pod network's CNI config.
type runtimeEnv struct {
	dir          string
	endpoint     string
	cniConfDir   string
	cniDataDir   string
	bridge       string
	podCIDR      string
	pauseImage   string
	busyboxImage string
	cri          *cri.Client
	pid          int

	registry *testimages.Registry
	cancel   context.CancelFunc
	done     chan error
}

// startRuntime starts containerd under dir (berth's generated config, as
// `berth up` runs it: restrict_oom_score_adj detected) with a CNI bridge
// network on podCIDR, pushes the images to a local registry and pulls them.
func startRuntime(ctx context.Context, dir, pauseBinary, busybox, bridge, podCIDR string) (_ *runtimeEnv, err error) {
	e := &runtimeEnv{dir: dir, bridge: bridge, podCIDR: podCIDR,
		cniConfDir: filepath.Join(dir, "net.d"), cniDataDir: filepath.Join(dir, "cni-ipam")}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	pause, err := os.ReadFile(pauseBinary)
	if err != nil {
		return nil, fmt.Errorf("pause binary (make build): %w", err)
	}
	pauseImg, err := testimages.PauseImage(pause)
	if err != nil {
		return nil, err
	}
	bbImg, err := testimages.BusyboxImage(busybox)
	if err != nil {
		return nil, err
	}
	if e.registry, err = testimages.StartRegistry(testimages.RegistryConfig{}); err != nil {
		return nil, err
	}
	if e.pauseImage, err = e.registry.Push(ctx, "bench/pause:1", pauseImg); err != nil {
		return nil, err
	}
	if e.busyboxImage, err = e.registry.Push(ctx, "bench/busybox:1", bbImg); err != nil {
		return nil, err
	}
	if err := e.writeCNIConfig(); err != nil {
		return nil, err
	}
	host := e.registry.Host()
	ctd, err := containerd.New(containerd.Config{
		Dir: filepath.Join(dir, "containerd"), CNIConfDir: e.cniConfDir, CNIBinDir: cniBinDir,
		SandboxImage: e.pauseImage, LogLevel: "warn",
		Registries: containerd.Registries{Mirrors: map[string]containerd.Mirror{host: {Endpoints: []string{"http://" + host}}}},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- ctd.Run(runCtx) }()
	select {
	case <-ctd.Ready():
	case err := <-e.done:
		e.done <- err
		return nil, fmt.Errorf("containerd stopped while starting: %v", err)
	case <-time.After(2 * time.Minute):
		return nil, errors.New("containerd not ready after 2 minutes")
	}
	e.endpoint, e.pid = ctd.Endpoint(), ctd.PID()
	if e.cri, err = cri.New(ctx, cri.Config{Endpoint: e.endpoint}); err != nil {
		return nil, err
	}
	for _, img := range []string{e.pauseImage, e.busyboxImage} {
		if _, err := e.cri.PullImage(ctx, img, nil, nil); err != nil {
			return nil, fmt.Errorf("pull %s: %w", img, err)
		}
	}
	return e, nil
}

// cniBinDir holds the CNI plugins (make deps).
const cniBinDir = "/usr/lib/cni"

// writeCNIConfig (re)writes the bridge network every side uses: what the
// berth agent writes for the same bridge and subnet.
func (e *runtimeEnv) writeCNIConfig() error {
	_, err := cni.Write(cni.Config{NetworkName: "bbench", BridgeName: e.bridge, PodCIDRs: []string{e.podCIDR},
		BinDirs: []string{cniBinDir}, ConfDir: e.cniConfDir, DataDir: e.cniDataDir})
	return err
}

// removeAll stops and removes every pod on the runtime.
func (e *runtimeEnv) removeAll() error { return up.RemoveAllPods(e.endpoint) }

// counts are the runtime's running containers and ready sandboxes.
func (e *runtimeEnv) counts(ctx context.Context) (running, ready int, err error) {
	cs, err := e.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return 0, 0, err
	}
	sbs, err := e.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return 0, 0, err
	}
	return len(cs), len(sbs), nil
}

// stop removes every pod, stops containerd and the registry, unmounts what
// is left under dir and deletes the bridge.
func (e *runtimeEnv) stop() {
	if e.cri != nil {
		if err := e.removeAll(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: removing pods:", err)
		}
		e.cri.Close()
	}
	if e.cancel != nil {
		e.cancel()
		<-e.done
	}
	if e.registry != nil {
		e.registry.Close()
	}
	if err := up.HostCleanup(e.dir, e.bridge); err != nil {
		fmt.Fprintln(os.Stderr, "bench: host cleanup:", err)
	}
}
