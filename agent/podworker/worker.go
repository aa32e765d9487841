package podworker

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/lifecycle"
	"berth/agent/metrics"
	"berth/agent/podstate"
	"berth/agent/source"
	"berth/agent/status"
)

// worker handles one pod. Its fields under mu are written by the manager
// (desired state) and read by the worker's goroutine; the rest belong to
// the goroutine alone.
type worker struct {
	m    *Manager
	uid  types.UID
	wake chan struct{}

	mu          sync.Mutex
	pod         *v1.Pod // desired; nil for an orphan
	terminating bool
	readd       *v1.Pod            // re-added while terminating
	dead        bool               // the worker ended; callers must make a new one
	cancelSync  context.CancelFunc // ends the sync in flight (the pod is removed)
	freshAfter  time.Time          // Wake: the next read must come from a relist begun after it
	// evicted is the node's eviction of the pod (Evict), once decided;
	// stoppedEvicted says the eviction is done.
	evicted        *Eviction
	stoppedEvicted bool
	admitted       bool // the pod passed admission (admit.go): it holds the node's resources
	// reclaims are DeleteAllUnusedContainers' requests (reclaim.go).
	reclaims []chan error

	failures     map[string]status.Failure // last start failure per container
	failureCount int                       // start failures recorded (fail): did acting fail?
	unpublished  map[string]bool           // containers whose failure (fail) no status showed yet
	rejected     *status.Failure           // why the agent ended the pod (Failed), once it did
	conditions   []v1.PodCondition         // pod conditions the agent set for its own reasons (an eviction's DisruptionTarget)
	seq          uint64

	firstSeen time.Time // when the worker was made: the pod's start for metrics
	synced    bool      // a sync ran: later ones are "sync", not "create"
	running   bool      // the pod was reported Running (start duration recorded)

	// lastWrite is when the worker last changed the pod in the runtime:
	// the state it reads next must come from a relist begun after it.
	lastWrite time.Time
	// holdUntil defers acting again after a failed step until its retry
	// time (or the next resync), unless something outside the worker wakes
	// it (a new spec, the PLEG, a probe result), as a failed sync waited
	// before; the sync right after acting only publishes meanwhile.
	holdUntil time.Time
}

func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// markTerminating makes the worker terminate its pod and end (unless the
// pod is added again meanwhile); w.mu is held.
func (w *worker) markTerminating() {
	w.terminating = true
	w.readd = nil
	if w.cancelSync != nil {
		w.cancelSync() // a sync blocked in a postStart hook ends
	}
}

func (w *worker) desired() (*v1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.terminating
}

func (w *worker) run(ctx context.Context) {
	cfg := &w.m.cfg
	timer := cfg.Clock.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			w.holdUntil = time.Time{}
		case <-timer.C():
		}
		pod, terminating := w.desired()
		var next time.Duration
		start := cfg.Clock.Now()
		if terminating {
			done := w.terminate(ctx, pod)
			cfg.Metrics.PodWorkerDone(metrics.OperationKill, cfg.Clock.Since(start))
			if !done {
				next = time.Second // retry what failed
			} else if !w.finishTermination() {
				return
			}
		} else if pod != nil {
			next = w.syncCancellable(ctx, pod)
			op := metrics.OperationSync
			if !w.synced {
				op, w.synced = metrics.OperationCreate, true
			}
			cfg.Metrics.PodWorkerDone(op, cfg.Clock.Since(start))
		} else {
			continue // an orphan about to be marked terminating
		}
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(next)
	}
}

// finishTermination ends the worker (false) — removing it from the manager
// under both locks, so that an Update either lands before and is seen here
// or finds no worker and makes a new one — unless the pod was added again
// while it terminated: then it runs again (true).
func (w *worker) finishTermination() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.readd == nil {
		w.m.mu.Lock()
		defer w.m.mu.Unlock()
		if w.m.workers[w.uid] == w {
			delete(w.m.workers, w.uid)
		}
		w.dead = true
		return false
	}
	w.m.cfg.Metrics.PodRestarted(source.IsStatic(w.readd))
	w.pod, w.readd, w.terminating = w.readd, nil, false
	w.evicted, w.stoppedEvicted = nil, false
	w.failures, w.rejected, w.admitted, w.holdUntil = map[string]status.Failure{}, nil, false, time.Time{}
	w.conditions = nil
	clear(w.unpublished)
	w.firstSeen, w.synced, w.running = w.m.cfg.Clock.Now(), false, false
	w.poke()
	return true
}

// syncCancellable runs sync under a context Remove cancels, so a pod removed
// while its worker waits for a postStart hook terminates at once.
func (w *worker) syncCancellable(ctx context.Context, pod *v1.Pod) time.Duration {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.mu.Lock()
	if w.terminating {
		w.mu.Unlock()
		return 0
	}
	w.cancelSync = cancel
	w.mu.Unlock()
	next := w.sync(sctx, pod)
	w.mu.Lock()
	w.cancelSync = nil
	w.mu.Unlock()
	return next
}

// sync brings the runtime one step towards the pod's spec and publishes the
// pod's status, computed once from the state the sync starts from (as the
// kubelet's syncPod); it returns when to sync again without news. It reads
// the pod from the runtime cache, newer than the worker's last change; after
// acting it syncs again at once, so the state its actions made is published
// without waiting for the PLEG.
func (w *worker) sync(ctx context.Context, pod *v1.Pod) time.Duration {
	cfg := &w.m.cfg
	log := cfg.Logger.With("pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
	rt, err := cfg.Cache.GetNewerThan(ctx, pod.UID, w.readAfter())
	if err != nil {
		log.Warn("reading the pod's runtime state failed", "err", err)
		return time.Second
	}
	if w.reclaim(ctx, log, pod, rt) {
		w.lastWrite = time.Now()
		return 0
	}
	if w.gone(pod, rt) {
		return cfg.Resync // finished, its runtime reclaimed: the last status stands
	}
	if e := w.eviction(); e != nil {
		return w.syncEvicted(ctx, log, pod, rt, e)
	}
	if !w.admit(pod, rt) {
		w.publish(pod, rt, false) // rejected before it ran: nothing to stop
		return cfg.Resync
	}
	now := cfg.Clock.Now()
	in := lifecycle.Input{Pod: pod, Runtime: rt, BackOff: cfg.BackOff, Now: now, StartTime: w.activeSince(pod)}
	if cfg.Probes != nil {
		cfg.Probes.AddPod(pod)
		in.Unhealthy = w.unhealthy
	}
	plan := lifecycle.Compute(in)
	if plan.DeadlineExceeded && w.rejected == nil {
		log.Info("the pod ran past its activeDeadlineSeconds; stopping it")
		w.rejected = &status.Failure{Reason: lifecycle.ReasonDeadlineExceeded, Message: lifecycle.MessageDeadlineExceeded}
		w.podEvent(pod, v1.EventTypeNormal, lifecycle.ReasonDeadlineExceeded, lifecycle.MessageDeadlineExceeded)
	}
	next := cfg.Resync
	for name, wait := range plan.Waiting {
		if w.unpublished[name] {
			continue // the last attempt's failure is shown until the next sync
		}
		w.failures[name] = status.Failure{Reason: wait.Reason, Message: wait.Message}
		if wait.Reason == lifecycle.ReasonCrashLoopBackOff {
			w.backOffEvent(pod, name)
		}
	}
	// As the kubelet, the status is published before the actions run: a
	// container whose postStart hook is running is not reported Running
	// until the hook is done and the next sync publishes it.
	w.publish(pod, rt, false)
	clear(w.unpublished)
	if !plan.RetryAt.IsZero() {
		next = min(next, max(plan.RetryAt.Sub(now), 10*time.Millisecond))
	}
	if !plan.Empty() {
		if now.Before(w.holdUntil) {
			return min(next, max(w.holdUntil.Sub(now), 10*time.Millisecond))
		}
		failures := w.failureCount
		retry := w.execute(ctx, log, pod, rt, &plan)
		w.lastWrite = time.Now()
		switch {
		case !retry.IsZero():
			w.holdUntil = retry
		case w.failureCount != failures:
			w.holdUntil = cfg.Clock.Now().Add(cfg.Resync)
		default:
			w.holdUntil = time.Time{}
		}
		return 0 // publish what the actions made
	}
	if w.collectGarbage(ctx, log, rt) {
		w.lastWrite = time.Now()
	}
	return next
}

// readAfter is the time the pod's state must be newer than: the worker's
// last change to the runtime, or a Wake since.
func (w *worker) readAfter() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.freshAfter.After(w.lastWrite) {
		return w.freshAfter
	}
	return w.lastWrite
}

// fail records why container name could not be started, for its status.
func (w *worker) fail(name string, f status.Failure) {
	w.failures[name] = f
	w.failureCount++
	w.unpublished[name] = true
}

// activeSince is when the pod's active deadline counts from: the startTime
// published, or, after a restart of the agent, the apiserver's; zero for a
// pod that finished on its own (its deadline no longer matters).
func (w *worker) activeSince(pod *v1.Pod) time.Time {
	old, ok := w.m.cfg.Status.Status(pod.UID)
	switch {
	case ok && (old.Phase == v1.PodSucceeded || old.Phase == v1.PodFailed) && w.rejected == nil:
		return time.Time{}
	case ok && old.StartTime != nil:
		return old.StartTime.Time
	case pod.Status.StartTime != nil:
		return pod.Status.StartTime.Time
	}
	return time.Time{}
}

// publish computes the pod's status and hands it to the status manager;
// terminal when the pod is stopped for good (status.Input.Terminal).
func (w *worker) publish(pod *v1.Pod, rt *podstate.Pod, terminal bool) {
	cfg := &w.m.cfg
	old, _ := cfg.Status.Status(pod.UID)
	var oldp *v1.PodStatus
	if old.StartTime != nil {
		oldp = &old
	}
	in := status.Input{
		Pod: pod, Runtime: rt, Old: oldp, Failures: w.failures, Rejected: w.rejected, Terminal: terminal, Conditions: w.conditions,
		RuntimeName: cfg.RuntimeName, HostIP: cfg.HostIP, QOSClass: cfg.QOSClass(pod), Now: cfg.Clock.Now(),
	}
	st := status.Observe(in)
	if cfg.Probes != nil {
		// The prober records what it probes and decides started and ready.
		cfg.Probes.UpdatePodStatus(pod, &st)
	}
	st = status.Finish(in, st)
	if st.Phase == v1.PodRunning && !w.running {
		w.running = true
		cfg.Metrics.PodRunning(cfg.Clock.Since(w.firstSeen))
	}
	w.seq++
	cfg.Status.Set(pod, st, w.seq)
}
