package probes

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxProbeRetries is how many times a probe that errors (could not be run)
// is tried at once before the attempt is given up, as the kubelet does.
const maxProbeRetries = 3

// worker is the state of one probe of one container, as the kubelet's probe
// worker. Its probe fields are touched only by the run in flight (a worker
// is either in the heap or running, never both); the scheduling fields are
// guarded by Manager.mu.
type worker struct {
	key       workerKey
	pod       *v1.Pod
	container *v1.Container
	spec      v1.Probe // with the API's defaults filled in
	period    time.Duration
	metrics   *workerMetrics

	// Probe state.
	containerID string // the container last seen, as the status gives it
	lastResult  Result
	resultRun   int  // how many times in a row lastResult came
	onHold      bool // liveness failed or startup concluded: wait for a new container

	// Scheduling state (Manager.mu).
	due       time.Time
	index     int // position in the heap; -1 when not in it
	triggered bool
	stopped   bool
}

func newWorker(key workerKey, pod *v1.Pod, c *v1.Container, met *metrics) *worker {
	spec := *key.probeType.spec(c)
	if spec.PeriodSeconds <= 0 {
		spec.PeriodSeconds = 10
	}
	if spec.TimeoutSeconds <= 0 {
		spec.TimeoutSeconds = 1
	}
	if spec.SuccessThreshold <= 0 {
		spec.SuccessThreshold = 1
	}
	if spec.FailureThreshold <= 0 {
		spec.FailureThreshold = 3
	}
	return &worker{
		key:       key,
		pod:       pod,
		container: c,
		spec:      spec,
		period:    time.Duration(spec.PeriodSeconds) * time.Second,
		metrics:   met.forWorker(key.probeType.String(), c.Name, pod.Name, pod.Namespace, string(pod.UID)),
		index:     -1,
	}
}

// restarts reports whether the container is restarted after it exits.
func (w *worker) restarts() bool {
	if w.container.RestartPolicy != nil {
		return *w.container.RestartPolicy == v1.ContainerRestartPolicyAlways
	}
	return w.pod.Spec.RestartPolicy != v1.RestartPolicyNever
}

// doProbe runs one period of the worker, as the kubelet's worker does, and
// reports whether the worker should keep going.
func (m *Manager) doProbe(ctx context.Context, w *worker) bool {
	start := m.clock.Now()
	pod, c, podKnown, containerKnown := m.snapshot(w)
	if !podKnown {
		return true // no status yet
	}
	if pod.phase == v1.PodFailed || pod.phase == v1.PodSucceeded {
		return false
	}
	if !containerKnown || c.id == "" {
		return true // not created yet, or gone
	}
	if w.containerID != c.id {
		if w.containerID != "" {
			m.removeResult(w)
		}
		w.containerID = c.id
		m.setResult(ctx, w, w.key.probeType.initialResult(), "")
		w.onHold = false
	}
	if w.onHold {
		return true
	}
	if !c.running {
		m.setResult(ctx, w, Failure, "container is not running")
		return !c.terminated || w.restarts()
	}
	if pod.deleting && (w.key.probeType == Liveness || w.key.probeType == Startup) {
		// A quiet shutdown: the pod is going away anyway.
		m.setResult(ctx, w, Success, "")
		return false
	}
	if int32(m.clock.Since(c.startedAt).Seconds()) < w.spec.InitialDelaySeconds {
		return true
	}
	if m.startedForProbing(w) {
		if w.key.probeType == Startup {
			return true
		}
	} else if w.key.probeType != Startup {
		return true
	}

	result, output, err := m.probe(ctx, w, pod.podIP)
	if err != nil {
		return true // could not probe: the attempt does not count
	}
	switch result {
	case Success:
		w.metrics.count(metricSuccessful)
		w.metrics.observe(m.clock.Since(start).Seconds())
	case Failure:
		w.metrics.count(metricFailed) // as the kubelet, failures are not timed
	default:
		w.metrics.count(metricUnknown)
		w.metrics.observe(m.clock.Since(start).Seconds())
	}
	if w.lastResult == result {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = result, 1
	}
	if (result == Failure && w.resultRun < int(w.spec.FailureThreshold)) ||
		(result == Success && w.resultRun < int(w.spec.SuccessThreshold)) {
		return true
	}
	m.setResult(ctx, w, result, output)
	if (w.key.probeType == Liveness && result == Failure) || w.key.probeType == Startup {
		// The container will be restarted (or has started): probe again
		// only once there is a new container.
		w.onHold = true
		w.resultRun = 0
	}
	return true
}

// probe runs the action, retrying one that errors, records the kubelet's
// events, and maps the action's result to the worker's: Warning counts as
// Success, Unknown as Failure.
func (m *Manager) probe(ctx context.Context, w *worker, podIP string) (Result, string, error) {
	t := Target{PodIP: podIP, Container: w.container, ContainerID: w.containerID}
	var (
		res Result
		out string
		err error
	)
	for i := 0; i < maxProbeRetries; i++ {
		res, out, err = m.prober.Probe(ctx, &w.spec, t)
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	typ := w.key.probeType.String()
	if err != nil {
		m.log.Debug("probe errored", "probe", typ, "pod", w.pod.Name, "namespace", w.pod.Namespace, "container", w.container.Name, "err", err)
		m.event(w, ReasonUnhealthy, "%s probe errored and resulted in %s state: %s", typ, res, err)
		return Failure, "", err
	}
	switch res {
	case Success:
		return Success, out, nil
	case Warning:
		m.event(w, ReasonProbeWarning, "%s probe warning: %s", typ, out)
		return Success, out, nil
	case Failure:
		m.event(w, ReasonUnhealthy, "%s probe failed: %s", typ, out)
		return Failure, out, nil
	}
	return Failure, out, nil
}

// event records a Warning event on the worker's container.
func (m *Manager) event(w *worker, reason, format string, args ...interface{}) {
	if m.rec == nil {
		return
	}
	m.rec.Eventf(ContainerRef(w.pod, w.container.Name), v1.EventTypeWarning, reason, format, args...)
}
