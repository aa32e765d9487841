package probes

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// DefaultMaxInFlight bounds the probes running at once when Config leaves it 0.
const DefaultMaxInFlight = 100

// batchWindow is how early a worker may run so the scheduler wakes once for
// the workers due close together, rather than once per worker: with
// thousands of probes spread over a period, fewer wake-ups cost less CPU.
const batchWindow = 10 * time.Millisecond

// DefaultUpdateBuffer is the capacity of the Updates channel when Config leaves it 0.
const DefaultUpdateBuffer = 1024

// Config configures a Manager.
type Config struct {
	// Exec runs exec probes (CRI ExecSync); *cri.Client satisfies it. Required.
	Exec Execer
	// HTTP sends httpGet probes; nil: a new HTTPGetter (share one with the HookRunner).
	HTTP *HTTPGetter
	// Registerer gets prober_probe_total and prober_probe_duration_seconds;
	// nil: the metrics are kept but not exported.
	Registerer prometheus.Registerer
	// Recorder gets the Unhealthy and ProbeWarning events; nil: none.
	Recorder EventRecorder
	// Logger logs probe errors; nil: discarded.
	Logger *slog.Logger
	// Clock drives probe periods, initial delays and jitter; nil: the real clock.
	Clock clock.Clock
	// MaxInFlight bounds the probes running at once; 0: DefaultMaxInFlight.
	MaxInFlight int
	// UpdateBuffer is the capacity of the Updates channel; 0: DefaultUpdateBuffer.
	UpdateBuffer int
	// Jitter returns a number in [0,1) scaling a new worker's first delay
	// (up to one period, only within one period of the Manager's creation, as
	// the kubelet does after a restart); nil: math/rand.
	Jitter func() float64
}

// validate checks cfg and fills in defaults.
func (cfg *Config) validate() error {
	if cfg.Exec == nil {
		return fmt.Errorf("probes config: Exec: required (the CRI client): %w", errdefs.ErrInvalidArgument)
	}
	if cfg.MaxInFlight < 0 {
		return fmt.Errorf("probes config: MaxInFlight %d: must not be negative: %w", cfg.MaxInFlight, errdefs.ErrInvalidArgument)
	}
	if cfg.UpdateBuffer < 0 {
		return fmt.Errorf("probes config: UpdateBuffer %d: must not be negative: %w", cfg.UpdateBuffer, errdefs.ErrInvalidArgument)
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.UpdateBuffer == 0 {
		cfg.UpdateBuffer = DefaultUpdateBuffer
	}
	if cfg.HTTP == nil {
		cfg.HTTP = NewHTTPGetter()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	return nil
}

// Manager runs the liveness, readiness and startup probes of the pods it is
// given, as the kubelet's prober manager does, and publishes result changes
// on Updates. One scheduler goroutine (Run) keeps every probe worker in a
// timer heap; a due worker runs on a short-lived goroutine, at most
// MaxInFlight at once, so an idle worker costs a heap entry and nothing else.
//
// The agent calls AddPod when it syncs a pod, UpdatePodStatus whenever it
// computes the pod's status (it tells the workers the container IDs and
// states, and fills in each container's started and ready),
// StopLivenessAndStartup when the pod starts terminating, and RemovePod (or
// CleanupPods) when the pod is gone. All methods are safe for concurrent use
// and never block on probes.
type Manager struct {
	prober  *Prober
	metrics *metrics
	rec     EventRecorder
	log     *slog.Logger
	clock   clock.Clock
	jitter  func() float64
	start   time.Time
	updates chan Update
	wake    chan struct{}
	slots   chan struct{}

	mu      sync.Mutex
	workers map[workerKey]*worker
	pods    map[types.UID]*podState
	queue   workerHeap
	results map[resultKey]Result

	// afterProbe, set by tests, is called after each worker run.
	afterProbe func(workerKey)
}

// workerKey names a worker: one per pod, container and probe type.
type workerKey struct {
	podUID    types.UID
	container string
	probeType ProbeType
}

// resultKey names a published result.
type resultKey struct {
	containerID string
	probeType   ProbeType
}

// podState is what the workers need of a pod's last status.
type podState struct {
	phase      v1.PodPhase
	podIP      string
	deleting   bool
	containers map[string]containerState
}

// containerState is what the workers need of a container's status.
type containerState struct {
	id         string
	running    bool
	startedAt  time.Time
	terminated bool
}

// New returns a Manager; start it with Run.
func New(cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Manager{
		prober:  NewProber(cfg.Exec, cfg.HTTP),
		metrics: met,
		rec:     cfg.Recorder,
		log:     cfg.Logger,
		clock:   cfg.Clock,
		jitter:  cfg.Jitter,
		start:   cfg.Clock.Now(),
		updates: make(chan Update, cfg.UpdateBuffer),
		wake:    make(chan struct{}, 1),
		slots:   make(chan struct{}, cfg.MaxInFlight),
		workers: map[workerKey]*worker{},
		pods:    map[types.UID]*podState{},
		results: map[resultKey]Result{},
	}, nil
}

// Updates delivers every change of a published result. The agent must keep
// reading it: probes wait while it is full.
func (m *Manager) Updates() <-chan Update { return m.updates }

// Result returns the published result of a container's probe of type t
// (containerID as the pod status gives it), and whether there is one.
func (m *Manager) Result(containerID string, t ProbeType) (Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[resultKey{containerID, t}]
	return r, ok
}

// AddPod creates a worker for every probe of the pod's containers and
// restartable init containers (sidecars) that has none yet. Probe specs are
// taken as they are now: changing them later needs RemovePod and AddPod.
func (m *Manager) AddPod(pod *v1.Pod) {
	now := m.clock.Now()
	m.mu.Lock()
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			m.addWorkersLocked(pod, c, now)
		}
	}
	for i := range pod.Spec.Containers {
		m.addWorkersLocked(pod, &pod.Spec.Containers[i], now)
	}
	m.mu.Unlock()
	m.signal()
}

func (m *Manager) addWorkersLocked(pod *v1.Pod, c *v1.Container, now time.Time) {
	for _, t := range []ProbeType{Startup, Readiness, Liveness} {
		if t.spec(c) == nil {
			continue
		}
		key := workerKey{pod.UID, c.Name, t}
		if _, ok := m.workers[key]; ok {
			continue
		}
		w := newWorker(key, pod, c, m.metrics)
		w.due = now
		if now.Sub(m.start) < w.period {
			w.due = now.Add(time.Duration(m.jitter() * float64(w.period)))
		}
		m.workers[key] = w
		m.queue.push(w)
	}
}

// StopLivenessAndStartup stops the pod's liveness and startup workers (the
// pod is terminating); readiness keeps running.
func (m *Manager) StopLivenessAndStartup(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if key.podUID == pod.UID && (key.probeType == Liveness || key.probeType == Startup) {
			m.stopLocked(w)
		}
	}
}

// RemovePod stops all the pod's workers and forgets its results.
func (m *Manager) RemovePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removePodLocked(pod.UID)
}

// CleanupPods removes every pod not in desired.
func (m *Manager) CleanupPods(desired sets.Set[types.UID]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	uids := sets.New[types.UID]()
	for key := range m.workers {
		uids.Insert(key.podUID)
	}
	for uid := range m.pods {
		uids.Insert(uid)
	}
	for uid := range uids {
		if !desired.Has(uid) {
			m.removePodLocked(uid)
		}
	}
}

func (m *Manager) removePodLocked(uid types.UID) {
	for key, w := range m.workers {
		if key.podUID == uid {
			m.stopLocked(w)
		}
	}
	delete(m.pods, uid)
}

// stopLocked stops w: at once if it is waiting, after its run if running.
func (m *Manager) stopLocked(w *worker) {
	w.stopped = true
	if m.workers[w.key] == w {
		delete(m.workers, w.key)
	}
	if w.index >= 0 {
		m.queue.remove(w)
		m.cleanupLocked(w)
	}
}

// cleanupLocked forgets a stopped worker's result and metric series.
func (m *Manager) cleanupLocked(w *worker) {
	if w.containerID != "" {
		delete(m.results, resultKey{w.containerID, w.key.probeType})
	}
	w.metrics.delete()
}

// UpdatePodStatus tells the workers the pod's current status (phase, pod IP,
// container IDs and states) and sets each container's Started and Ready in
// status from the probe results, as the kubelet does: started when running
// and its startup probe succeeded (or it has none); ready when started,
// running, and its readiness probe succeeded (or it has none). A readiness
// probe that has not succeeded yet is run at once. A non-restartable init
// container is ready when it exited 0.
func (m *Manager) UpdatePodStatus(pod *v1.Pod, status *v1.PodStatus) {
	st := &podState{
		phase:      status.Phase,
		podIP:      status.PodIP,
		deleting:   pod.DeletionTimestamp != nil,
		containers: make(map[string]containerState, len(status.ContainerStatuses)+len(status.InitContainerStatuses)),
	}
	record := func(cs *v1.ContainerStatus) {
		c := containerState{id: cs.ContainerID, terminated: cs.State.Terminated != nil}
		if r := cs.State.Running; r != nil {
			c.running, c.startedAt = true, r.StartedAt.Time
		}
		st.containers[cs.Name] = c
	}
	for i := range status.InitContainerStatuses {
		record(&status.InitContainerStatuses[i])
	}
	for i := range status.ContainerStatuses {
		record(&status.ContainerStatuses[i])
	}

	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		sidecars[c.Name] = c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
	}
	now := m.clock.Now()
	m.mu.Lock()
	m.pods[pod.UID] = st
	triggered := false
	for i := range status.ContainerStatuses {
		triggered = m.setStartedReadyLocked(pod.UID, &status.ContainerStatuses[i], now) || triggered
	}
	for i := range status.InitContainerStatuses {
		cs := &status.InitContainerStatuses[i]
		if !sidecars[cs.Name] {
			started := m.startedLocked(pod.UID, cs)
			cs.Started = &started
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
			continue
		}
		triggered = m.setStartedReadyLocked(pod.UID, cs, now) || triggered
	}
	m.mu.Unlock()
	if triggered {
		m.signal()
	}
}

// setStartedReadyLocked fills Started and Ready of cs, and reports whether
// it triggered a readiness probe.
func (m *Manager) setStartedReadyLocked(uid types.UID, cs *v1.ContainerStatus, now time.Time) bool {
	started := m.startedLocked(uid, cs)
	cs.Started = &started
	if !started {
		cs.Ready = false
		return false
	}
	if cs.State.Running == nil {
		cs.Ready = false
		return false
	}
	if r, ok := m.results[resultKey{cs.ContainerID, Readiness}]; ok && r == Success {
		cs.Ready = true
		return false
	}
	w, exists := m.workers[workerKey{uid, cs.Name, Readiness}]
	cs.Ready = !exists
	if exists {
		m.triggerLocked(w, now)
	}
	return exists
}

// startedLocked: running, and the startup probe succeeded or there is none.
func (m *Manager) startedLocked(uid types.UID, cs *v1.ContainerStatus) bool {
	if cs.State.Running == nil {
		return false
	}
	if r, ok := m.results[resultKey{cs.ContainerID, Startup}]; ok {
		return r == Success
	}
	_, hasStartup := m.workers[workerKey{uid, cs.Name, Startup}]
	return !hasStartup
}

// triggerLocked makes w run now (or right after its current run), its period
// counting again from then.
func (m *Manager) triggerLocked(w *worker, now time.Time) {
	if w.stopped {
		return
	}
	if w.index < 0 {
		w.triggered = true
		return
	}
	w.due = now
	m.queue.fix(w)
}

// signal wakes the scheduler to look at the heap again.
func (m *Manager) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run schedules the probes until ctx ends, then waits for the probes in
// flight and returns nil. Call it once.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		m.mu.Lock()
		now := m.clock.Now()
		var due []*worker
		horizon := now.Add(batchWindow)
		for m.queue.Len() > 0 && !m.queue.peek().due.After(horizon) {
			w := m.queue.pop()
			due = append(due, w)
		}
		wait := time.Duration(-1)
		if m.queue.Len() > 0 {
			wait = m.queue.peek().due.Sub(now)
		}
		m.mu.Unlock()

		for _, w := range due {
			select {
			case m.slots <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-m.slots }()
				m.runWorker(ctx, w)
			}()
		}
		if len(due) > 0 {
			continue // time passed while dispatching: look again
		}

		var timerC <-chan time.Time
		var timer clock.Timer
		if wait >= 0 {
			timer = m.clock.NewTimer(wait)
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case <-m.wake:
		case <-timerC:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// runWorker probes once for w and puts it back in the heap (or retires it).
func (m *Manager) runWorker(ctx context.Context, w *worker) {
	keep := m.doProbeSafe(ctx, w)
	m.mu.Lock()
	if !keep || w.stopped || ctx.Err() != nil {
		w.stopped = true
		if m.workers[w.key] == w {
			delete(m.workers, w.key)
		}
		m.cleanupLocked(w)
	} else {
		now := m.clock.Now()
		if w.triggered {
			w.triggered = false
			w.due = now
		} else {
			w.due = w.due.Add(w.period)
			if w.due.Before(now) {
				w.due = now
			}
		}
		m.queue.push(w)
	}
	first := w.index == 0
	m.mu.Unlock()
	if first {
		m.signal() // due before what the scheduler waits for
	}
	if m.afterProbe != nil {
		m.afterProbe(w.key)
	}
}

// doProbeSafe runs doProbe, keeping the worker on a panic (logged).
func (m *Manager) doProbeSafe(ctx context.Context, w *worker) (keep bool) {
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("probe worker panicked", "pod", w.pod.Name, "namespace", w.pod.Namespace, "container", w.container.Name, "probe", w.key.probeType.String(), "panic", r)
			keep = true
		}
	}()
	return m.doProbe(ctx, w)
}

// snapshot returns the pod's state and the container's, if known.
func (m *Manager) snapshot(w *worker) (pod podState, c containerState, podKnown, containerKnown bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.pods[w.key.podUID]
	if !ok {
		return podState{}, containerState{}, false, false
	}
	c, ok = st.containers[w.key.container]
	return *st, c, true, ok
}

// setResult publishes r for the worker's container and sends an Update if
// it changed.
func (m *Manager) setResult(ctx context.Context, w *worker, r Result, msg string) {
	k := resultKey{w.containerID, w.key.probeType}
	m.mu.Lock()
	prev, ok := m.results[k]
	changed := !ok || prev != r
	m.results[k] = r
	m.mu.Unlock()
	if !changed {
		return
	}
	u := Update{ContainerID: w.containerID, PodUID: w.key.podUID, ContainerName: w.key.container, Type: w.key.probeType, Result: r, Message: msg}
	select {
	case m.updates <- u:
	case <-ctx.Done():
	}
}

// removeResult forgets the published result of the worker's old container.
func (m *Manager) removeResult(w *worker) {
	m.mu.Lock()
	delete(m.results, resultKey{w.containerID, w.key.probeType})
	m.mu.Unlock()
}

// startedForProbing reports whether the worker's container counts as started:
// its startup probe succeeded, or it has none.
func (m *Manager) startedForProbing(w *worker) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.results[resultKey{w.containerID, Startup}]; ok {
		return r == Success
	}
	_, hasStartup := m.workers[workerKey{w.key.podUID, w.key.container, Startup}]
	return !hasStartup
}
