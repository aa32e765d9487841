package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/containerconfig"
	"berth/agent/sandboxconfig"
	"berth/internal/api/defaults"
	"berth/internal/api/scheme"
)

// Sides of the pod startup benchmark.
const (
	sideAgent   = "berth agent"
	sideKubelet = "kubelet"
	sideFloor   = "CRI floor"
)

// podSide starts N pods on the shared runtime one way.
type podSide interface {
	// start brings the side up and returns once it is idle.
	start(ctx context.Context) error
	// pids are the processes whose RSS and CPU are measured (none for the
	// floor, which is the benchmark itself).
	pids() []int
	// launch starts n pods (returns once they are handed over).
	launch(ctx context.Context, n int) error
	// teardown asks for every pod to be stopped.
	teardown(ctx context.Context) error
	// stop ends the side and removes its files.
	stop()
}

// startupRound is one side's start of n pods.
type startupRound struct {
	Side string `json:"side"`
	N    int    `json:"n"`
	Rep  int    `json:"rep"`
	// StartedMs are the per-pod times from t0 to the container's StartedAt.
	StartedMs  []float64 `json:"startedMs"`
	P50Ms      float64   `json:"p50Ms"`
	P99Ms      float64   `json:"p99Ms"`
	TotalMs    float64   `json:"totalMs"`
	TeardownMs float64   `json:"teardownMs"`
	IdleRSSMiB float64   `json:"idleRssMiB,omitempty"`
	RSSMiB     float64   `json:"rssMiB,omitempty"`
	CPUSec     float64   `json:"cpuSec,omitempty"`
}

// podManifest is the benchmark's pod: one busybox container that waits
// (no CPU) and exits at once on SIGTERM.
func podManifest(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
  labels: {app: bbench}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`, name, image)
}

// runStartupRound measures one side starting n pods: from a common t0 (just
// before the first manifest is written or the first CRI call) to each
// container's StartedAt as the runtime reports it, then the teardown until
// no container runs and no sandbox is ready.
func (b *bench) runStartupRound(ctx context.Context, kind string, n, rep int) (startupRound, error) {
	r := startupRound{Side: kind, N: n, Rep: rep}
	dir := filepath.Join(b.work, fmt.Sprintf("startup-%s-%d-%d", strings.ReplaceAll(kind, " ", "-"), n, rep))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	if err := b.rt.writeCNIConfig(); err != nil {
		return r, err
	}
	var s podSide
	switch kind {
	case sideAgent:
		s = &agentSide{b: b, dir: dir}
	case sideKubelet:
		s = &kubeletSide{b: b, dir: dir}
	default:
		s = &floorSide{b: b, dir: dir}
	}
	defer func() {
		s.stop()
		if err := b.rt.removeAll(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}()
	if err := s.start(ctx); err != nil {
		return r, fmt.Errorf("%s: %w", kind, err)
	}
	u0 := usageOf(s.pids()...)
	r.IdleRSSMiB = mib(u0.RSS)

	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	launched := make(chan error, 1)
	t0 := time.Now()
	go func() { launched <- s.launch(ctx, n) }()
	started := map[string]time.Time{}
	var launchErr error
	err := waitFor(10*time.Minute, 50*time.Millisecond, fmt.Sprintf("%d containers running (%s)", n, kind), func() (bool, error) {
		select {
		case launchErr = <-launched:
			if launchErr != nil {
				return false, launchErr
			}
		default:
		}
		cs, err := b.rt.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			if _, ok := started[c.GetId()]; ok {
				continue
			}
			st, err := b.rt.cri.ContainerStatus(ctx, c.GetId(), false)
			if err != nil {
				continue
			}
			started[c.GetId()] = time.Unix(0, st.GetStatus().GetStartedAt())
		}
		return len(started) >= n, nil
	})
	if err != nil {
		return r, err
	}
	u1 := usageOf(s.pids()...)
	var lat []time.Duration
	for _, at := range started {
		d := at.Sub(t0)
		lat = append(lat, d)
		r.StartedMs = append(r.StartedMs, ms(d))
	}
	r.P50Ms, r.P99Ms, r.TotalMs = ms(percentile(lat, 50)), ms(percentile(lat, 99)), ms(percentile(lat, 100))
	r.RSSMiB, r.CPUSec = mib(u1.RSS), (u1.CPU - u0.CPU).Seconds()

	td := time.Now()
	if err := s.teardown(ctx); err != nil {
		return r, fmt.Errorf("%s teardown: %w", kind, err)
	}
	err = waitFor(5*time.Minute, 50*time.Millisecond, "every pod stopped ("+kind+")", func() (bool, error) {
		running, ready, err := b.rt.counts(ctx)
		return err == nil && running == 0 && ready == 0, err
	})
	r.TeardownMs = ms(time.Since(td))
	return r, err
}

// writeManifests writes n pod manifests into dir/staging, ready for
// moveManifests.
func writeManifests(dir, image string, n int) error {
	staging := filepath.Join(dir, "staging")
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return err
	}
	for i := range n {
		name := fmt.Sprintf("bbench-%03d", i)
		if err := os.WriteFile(filepath.Join(staging, name+".yaml"), []byte(podManifest(name, image)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// moveManifests moves the first n staged manifests into manifests one after
// another (renames: the watcher never reads a partial file).
func moveManifests(dir, manifests string, n int) error {
	for i := range n {
		name := fmt.Sprintf("bbench-%03d.yaml", i)
		if err := os.Rename(filepath.Join(dir, "staging", name), filepath.Join(manifests, name)); err != nil {
			return err
		}
	}
	return nil
}

// removeManifests deletes every manifest: the side stops the pods.
func removeManifests(manifests string) error {
	entries, err := os.ReadDir(manifests)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(manifests, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// waitHealthz polls url until it answers 200 or p exits.
func waitHealthz(p *proc, url string, timeout time.Duration) error {
	return waitFor(timeout, 100*time.Millisecond, p.name+" healthz", func() (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited:\n%s", p.name, p.logTail())
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// settle is the pause after a side reports healthy, before t0: its
// start-up work (first relists, housekeeping) is over.
const settle = 3 * time.Second

// agentSide is `berth agent` with static pods only.
type agentSide struct {
	b    *bench
	dir  string
	p    *proc
	port int
}

func (a *agentSide) start(ctx context.Context) error {
	b := a.b
	manifests := filepath.Join(a.dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return err
	}
	if err := writeManifests(a.dir, b.rt.busyboxImage, b.maxN); err != nil {
		return err
	}
	a.port = freePort()
	var err error
	a.p, err = startProc("berth agent", filepath.Join(b.logs, "agent-"+filepath.Base(a.dir)+".log"), b.berth, append([]string{"agent",
		"--pod-manifest-path", manifests,
		"--container-runtime-endpoint", b.rt.endpoint,
		"--root-dir", filepath.Join(a.dir, "root"),
		"--pod-cidr", b.rt.podCIDR,
		"--cni-conf-dir", b.rt.cniConfDir,
		"--cni-bin-dir", cniBinDir,
		"--cni-bridge", b.rt.bridge,
		"--pod-log-dir", filepath.Join(a.dir, "pods"),
		"--node-name", "bbench-agent",
		"--node-ip", "127.0.0.1",
		"--address", "127.0.0.1",
		"--read-only-port", strconv.Itoa(a.port),
		"--cgroup-root", "/bbench-agent",
	}, b.agentArgs...)...)
	if err != nil {
		return err
	}
	if err := waitHealthz(a.p, fmt.Sprintf("http://127.0.0.1:%d/healthz", a.port), time.Minute); err != nil {
		return err
	}
	// Idle: once it has given back the binary's start-up pages.
	_ = waitFor(30*time.Second, 100*time.Millisecond, "the agent idle", func() (bool, error) {
		log, _ := os.ReadFile(a.p.logPath)
		return strings.Contains(string(log), "gave back the binary's start-up pages"), nil
	})
	time.Sleep(settle)
	return nil
}

func (a *agentSide) pids() []int { return []int{a.p.pid()} }

func (a *agentSide) launch(_ context.Context, n int) error {
	return moveManifests(a.dir, filepath.Join(a.dir, "manifests"), n)
}

// teardown first saves the agent's metrics with every pod running (its
// CRI calls by operation, with their latencies: where the time went),
// then removes the manifests.
func (a *agentSide) teardown(context.Context) error {
	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", a.port)); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = os.WriteFile(filepath.Join(a.b.logs, fmt.Sprintf("agent-metrics-%s.txt", filepath.Base(a.dir))), body, 0o644)
	}
	return removeManifests(filepath.Join(a.dir, "manifests"))
}

func (a *agentSide) stop() {
	a.p.stop(time.Minute)
	if err := removeCgroup("/bbench-agent"); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
}

// floorSide is the runtime floor: only RunPodSandbox, CreateContainer and
// StartContainer, with at most 2 × cores pods in flight, for the same pod
// spec (berth's CRI configs for it, as the agent builds them).
type floorSide struct {
	b   *bench
	dir string
}

func (f *floorSide) start(context.Context) error { return nil }

func (f *floorSide) pids() []int { return nil }

// floorParallel is the floor's bound on pods in flight.
func floorParallel() int { return 2 * runtime.NumCPU() }

// inParallel runs fn(0..n-1) with at most limit calls at once and returns
// the first error.
func inParallel(n, limit int, fn func(i int) error) error {
	sem := make(chan struct{}, limit)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func (f *floorSide) launch(ctx context.Context, n int) error {
	rt := f.b.rt
	type cfgs struct {
		sb  *runtimeapi.PodSandboxConfig
		ctr *runtimeapi.ContainerConfig
	}
	all := make([]cfgs, n)
	for i := range n {
		pod, err := scheme.DecodePod([]byte(podManifest(fmt.Sprintf("bbench-%03d", i), rt.busyboxImage)))
		if err != nil {
			return err
		}
		pod.UID = types.UID(fmt.Sprintf("bbench-floor-%03d-%d", i, time.Now().UnixNano()))
		defaults.Pod(pod)
		sb, err := sandboxconfig.Build(pod, sandboxconfig.Options{PodLogDir: filepath.Join(f.dir, "pods"), CgroupRoot: "/bbench-floor"})
		if err != nil {
			return err
		}
		ctr, err := containerconfig.Build(pod, &pod.Spec.Containers[0], containerconfig.Options{})
		if err != nil {
			return err
		}
		all[i] = cfgs{sb, ctr}
	}
	return inParallel(n, floorParallel(), func(i int) error {
		id, err := rt.cri.RunPodSandbox(ctx, all[i].sb, "")
		if err != nil {
			return err
		}
		cid, err := rt.cri.CreateContainer(ctx, id, all[i].ctr, all[i].sb)
		if err != nil {
			return err
		}
		return rt.cri.StartContainer(ctx, cid)
	})
}

func (f *floorSide) teardown(ctx context.Context) error {
	sbs, err := f.b.rt.cri.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	return inParallel(len(sbs), floorParallel(), func(i int) error {
		return f.b.rt.cri.StopPodSandbox(ctx, sbs[i].GetId())
	})
}

func (f *floorSide) stop() {
	if err := f.b.rt.removeAll(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	if err := removeCgroup("/bbench-floor"); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
}
