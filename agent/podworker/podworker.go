// Package podworker runs pods: one worker goroutine per pod, so each pod is
// handled serially and pods in parallel. A worker syncs its pod whenever it
// is told something changed (a new spec, the PLEG, a probe result, a
// back-off expiring): it reads the pod's state from the runtime cache the
// PLEG fills (agent/podruntime), asks agent/lifecycle for a plan, hands the
// pod's status to the status manager, executes the plan through Runtime and
// the pod hooks (podhooks.go), and garbage-collects the pod's dead
// containers and sandboxes. A pod that is
// removed is terminated — containers stopped within the grace period, then
// removed with the sandbox, logs and per-pod files — and its worker ends.
//
// With a prober (Config.Probes) the worker adds its pod's probes, takes the
// containers' started and ready from them (so ContainersReady and Ready
// follow readiness), and restarts a container whose liveness or startup
// probe failed, per restart policy and back-off, with a Killing event. With
// a hook runner (Config.Hooks) a container's postStart hook runs right after
// it starts — the container is reported Running only once the hook is done,
// and a failed hook kills it (FailedPostStartHook) — and its preStop hook
// runs before every stop, its time taken from the grace period (hooks.go).
//
// With an event recorder (Config.Recorder) the worker records the events
// the kubelet records, with its reasons and messages (events.go). With
// metrics it feeds the pod startup SLI: the pods as the watch delivers them
// (Update) and its pods' image pulls.
//
// The worker alone decides whether a pod's containers may run; sandbox
// creation is bounded across pods, first come first served.
package podworker

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"berth/agent/backoff"
	"berth/agent/containerconfig"
	"berth/agent/metrics"
	"berth/agent/podruntime"
	"berth/agent/podstate"
	"berth/agent/sandboxconfig"
	"berth/agent/status"
	"berth/internal/errdefs"
	"berth/probes"
)

// Waiting reasons of start failures, as upstream writes them.
const (
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
)

// Config configures a Manager. CRI, Cache, Status, BackOff, Images,
// SandboxOptions.PodLogDir and RootDir are required.
type Config struct {
	// CRI is the runtime the workers act on.
	CRI Runtime
	// Cache is the runtime cache the PLEG fills (agent/podruntime): the
	// workers read their pods' state from it, never listing the runtime.
	Cache   *podruntime.Cache
	Status  *status.Manager
	BackOff *backoff.Tracker

	// Images makes container images present (pull policy, back-off).
	Images ImagePuller
	// SandboxOptions are the node's settings for sandbox configs
	// (agent/sandboxconfig); the worker sets Attempt.
	SandboxOptions sandboxconfig.Options
	// ContainerOptions are the node's settings for container configs
	// (agent/containerconfig: NodeName, HostIPs, MemoryCapacity, CgroupV2,
	// …); the worker sets the per-container fields.
	ContainerOptions containerconfig.Options
	// Admit is the node's admission of a pod it has not started yet
	// (agent/admission's predicates, agent/sysctl's allowlist, the
	// eviction manager's), given the other pods the node has admitted and
	// not finished; calls are serial. A pod it refuses is Failed with
	// reason and "Pod was rejected: <message>", and never started. Nil
	// admits all.
	Admit func(pod *v1.Pod, others []*v1.Pod) (reason, message string, ok bool)
	// Env resolves each container's ConfigMap, Secret and Service variables
	// into its options (agent/envsource) before its config is built; a
	// failure is a CreateContainerConfigError, retried. Nil: none resolved.
	Env interface {
		Fill(ctx context.Context, pod *v1.Pod, c *v1.Container, opts *containerconfig.Options) error
	}

	// Volumes sets up and tears down the pods' volumes (agent/volumes); nil
	// runs pods without their volumes set up (a pod declaring volume mounts
	// then fails with CreateContainerConfigError).
	Volumes Volumes

	// NetworkReady reports why pod networking cannot be set up yet (nil:
	// ready); pods that are not host-network wait for it. Nil means ready.
	NetworkReady func() error
	// PodCleanup removes what the node keeps for a pod outside the runtime
	// (cgroups); called once the pod's containers and sandboxes are gone.
	// Nil means nothing.
	PodCleanup func(uid types.UID, pod *v1.Pod) error

	// Probes runs the containers' liveness, readiness and startup probes;
	// the manager runs it (Run), adds every synced pod to it, takes the
	// containers' started and ready from it, restarts containers whose
	// liveness or startup probe failed, and wakes a pod's worker on each
	// result change. Nil: no probes (containers are ready while running).
	Probes Prober
	// Hooks runs postStart and preStop handlers; nil: hooks are not run.
	Hooks LifecycleHooks
	// Recorder receives the events the kubelet records for its pods
	// (events.go: image, Created, Started, Failed, BackOff, Killing,
	// SandboxChanged, FailedCreatePodSandBox, NetworkNotReady, DNS
	// warnings, the hooks'), and MissingClusterDNS on the Node named by
	// ContainerOptions.NodeName as well; nil: none (standalone).
	Recorder probes.EventRecorder

	// RootDir holds per-pod files (termination message files) under
	// <RootDir>/pods/<uid>.
	RootDir string
	// NodeHostsFile is the node's hosts file, the base of host-network
	// pods' managed /etc/hosts; default /etc/hosts.
	NodeHostsFile string
	// RuntimeHandler is passed to RunPodSandbox (empty: the default).
	RuntimeHandler string
	// PodRuntimeHandler, when set, returns the runtime handler of a pod's
	// RuntimeClass (agent/runtimeclass) instead: empty for a pod naming
	// none; an error (a class that does not exist) fails the sandbox's
	// creation with FailedCreatePodSandBox, retried at the next sync.
	PodRuntimeHandler func(*v1.Pod) (string, error)
	// RuntimeName prefixes container IDs in status; default "containerd".
	RuntimeName string
	// HostIP is the node's address, shown in pod status.
	HostIP string
	// QOSClass computes a pod's QoS class for its status (agent/qos).
	QOSClass func(*v1.Pod) v1.PodQOSClass
	// MaxStarts bounds the pod starts in flight; default 2 × CPUs.
	MaxStarts int
	// Resync is the period of a pod's sync without any change; default 10 s.
	Resync time.Duration
	// Clock is the time source; default the real clock.
	Clock clock.Clock
	// Metrics gets started pods and containers, pod start and pod sync
	// durations; nil: none.
	Metrics *metrics.Metrics
	// Logger; default discards.
	Logger *slog.Logger
	// PullCredentials returns the registry credentials for pulling image
	// for pod (its imagePullSecrets and its service account's), tried in
	// order; optional (nil: anonymous pulls).
	PullCredentials func(ctx context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig
}

func (c *Config) validate() error {
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"CRI", c.CRI != nil}, {"Cache", c.Cache != nil}, {"Status", c.Status != nil}, {"BackOff", c.BackOff != nil},
		{"Images", c.Images != nil}, {"SandboxOptions.PodLogDir", c.SandboxOptions.PodLogDir != ""}, {"RootDir", c.RootDir != ""},
	} {
		if !f.ok {
			return fmt.Errorf("podworker: Config.%s is required: %w", f.name, errdefs.ErrInvalidArgument)
		}
	}
	if c.MaxStarts < 0 {
		return fmt.Errorf("podworker: Config.MaxStarts must not be negative, got %d: %w", c.MaxStarts, errdefs.ErrInvalidArgument)
	}
	if c.MaxStarts == 0 {
		c.MaxStarts = 2 * runtime.NumCPU()
	}
	if c.Resync <= 0 {
		c.Resync = 10 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RuntimeName == "" {
		c.RuntimeName = "containerd"
	}
	if c.NodeHostsFile == "" {
		c.NodeHostsFile = "/etc/hosts"
	}
	if c.QOSClass == nil {
		c.QOSClass = func(*v1.Pod) v1.PodQOSClass { return "" }
	}
	return nil
}

// Manager owns the pod workers.
type Manager struct {
	cfg   Config
	hooks []any // the pod hooks (podhooks.go), in order
	// termination and etcHosts are the hooks whose files each container's
	// creation needs.
	termination *terminationMessagesHook
	etcHosts    *etcHostsHook
	gate        *startGate
	ctx         context.Context
	ready       chan struct{}

	admitMu sync.Mutex // admissions are serial (admit.go)

	mu      sync.Mutex
	workers map[types.UID]*worker
	stopped bool // Run is waiting for the workers: no new one may start
	wg      sync.WaitGroup
}

// New validates cfg and returns a manager; Run starts it.
func New(cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Manager{cfg: cfg, gate: newStartGate(cfg.MaxStarts), ready: make(chan struct{}), workers: map[types.UID]*worker{},
		termination: &terminationMessagesHook{root: cfg.RootDir},
		etcHosts:    &etcHostsHook{root: cfg.RootDir, nodeHosts: cfg.NodeHostsFile, clusterDomain: cfg.SandboxOptions.DNS.ClusterDomain},
	}
	m.hooks = newHooks(&cfg, m.termination, m.etcHosts)
	return m, nil
}

// Run serves until ctx ends, then waits for the workers to stop. Stopping
// the manager leaves the pods running: a restarted agent adopts them.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	close(m.ready)
	m.mu.Unlock()
	if p := m.cfg.Probes; p != nil {
		m.wg.Add(2)
		go func() {
			defer m.wg.Done()
			if err := p.Run(ctx); err != nil {
				m.cfg.Logger.Error("the prober stopped", "err", err)
			}
		}()
		go func() {
			defer m.wg.Done()
			m.forwardProbeUpdates(ctx, p.Updates())
		}()
	}
	<-ctx.Done()
	// No worker is added (wg.Add, under mu) once Wait may run.
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// Update sets the desired pod: a new pod gets a worker, a known one a new
// spec. A pod being deleted (a deletionTimestamp) is never started, as the
// kubelet: its worker terminates it, with the deletion's grace period, and
// ends. It does not wait for the pod's sync (but, called before Run, it
// waits for Run to start).
func (m *Manager) Update(pod *v1.Pod) {
	m.cfg.Metrics.PodObservedOnWatch(pod, m.cfg.Clock.Now())
	for {
		w := m.worker(pod.UID, true)
		if w == nil {
			return
		}
		w.mu.Lock()
		if w.dead {
			w.mu.Unlock()
			continue
		}
		switch {
		case pod.DeletionTimestamp != nil:
			w.pod = pod
			w.markTerminating()
		case w.terminating:
			w.readd = pod // runs again once the termination is complete
		default:
			w.pod = pod
		}
		w.mu.Unlock()
		w.poke()
		return
	}
}

// Remove terminates the pod: its worker stops and removes everything the pod
// holds, then ends. It returns at once.
func (m *Manager) Remove(uid types.UID) {
	w := m.worker(uid, false)
	if w == nil {
		return
	}
	w.mu.Lock()
	w.markTerminating()
	w.mu.Unlock()
	w.poke()
}

// RemoveOrphan terminates a pod the runtime holds but no source knows (left
// over from a previous run): its containers are stopped with the grace
// period recorded on them.
func (m *Manager) RemoveOrphan(uid types.UID) {
	for {
		w := m.worker(uid, true)
		if w == nil {
			return
		}
		w.mu.Lock()
		if w.dead {
			w.mu.Unlock()
			continue
		}
		if w.pod == nil {
			w.terminating = true
		}
		w.mu.Unlock()
		w.poke()
		return
	}
}

// Wake asks the pod's worker to sync because the runtime changed: the sync
// reads the pod's state from a relist begun after the call.
func (m *Manager) Wake(uid types.UID) {
	if w := m.worker(uid, false); w != nil {
		w.mu.Lock()
		w.freshAfter = time.Now()
		w.mu.Unlock()
		w.poke()
	}
}

// Observed asks the pod's worker to sync from the runtime cache as it is:
// the PLEG's relist saw the pod change, or a probe result changed.
func (m *Manager) Observed(uid types.UID) {
	if w := m.worker(uid, false); w != nil {
		w.poke()
	}
}

// Known reports whether a worker runs for uid.
func (m *Manager) Known(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.workers[uid]
	return ok
}

// UIDs lists the pods that have a worker (running or terminating).
func (m *Manager) UIDs() []types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]types.UID, 0, len(m.workers))
	for uid := range m.workers {
		out = append(out, uid)
	}
	return out
}

// worker returns uid's worker, creating it when create is set.
func (m *Manager) worker(uid types.UID, create bool) *worker {
	<-m.ready
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.workers[uid]; ok {
		return w
	}
	if !create || m.stopped || m.ctx.Err() != nil {
		return nil
	}
	w := &worker{m: m, uid: uid, wake: make(chan struct{}, 1), failures: map[string]status.Failure{}, unpublished: map[string]bool{}, firstSeen: m.cfg.Clock.Now()}
	m.workers[uid] = w
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		w.run(m.ctx)
	}()
	return w
}

// gracePeriod is the pod's termination grace period, or the one recorded on
// its containers when the spec is unknown; upstream's minimum of 2 s (a zero
// grace period is a forced kill only on deletion, which static pods lack).
func gracePeriod(pod *v1.Pod, rt *podstate.Pod) time.Duration {
	secs := int64(v1.DefaultTerminationGracePeriodSeconds)
	switch {
	case pod != nil && pod.DeletionGracePeriodSeconds != nil:
		secs = *pod.DeletionGracePeriodSeconds
	case pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil:
		secs = *pod.Spec.TerminationGracePeriodSeconds
	case rt != nil:
		for _, c := range rt.Containers {
			if c.GracePeriod != nil {
				secs = *c.GracePeriod
				break
			}
		}
	}
	return time.Duration(max(secs, 2)) * time.Second
}
