package podworker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/probes"
)

// Event reasons the worker records, the kubelet's.
const (
	// ReasonKilling is a container being stopped.
	ReasonKilling = "Killing"
	// ReasonPostStartHookError is the waiting reason of a container whose
	// postStart hook failed (upstream's ErrPostStartHook).
	ReasonPostStartHookError = "PostStartHookError"
)

// minStopGrace is the least time a container is given to stop, as the
// kubelet's minimumGracePeriodInSeconds.
const minStopGrace = 2 * time.Second

// stopTarget is a container to stop.
type stopTarget struct {
	ID, Name string
	// Grace overrides the pod's grace period when not zero.
	Grace time.Duration
	// Message is the Killing event's; "" gives "Stopping container <name>".
	Message string
}

// forwardProbeUpdates wakes the worker of the pod whose probe result
// changed, so its status (ready, started) follows at once and a container
// whose liveness or startup probe failed is restarted at once.
func (m *Manager) forwardProbeUpdates(ctx context.Context, updates <-chan probes.Update) {
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-updates:
			m.Observed(u.PodUID)
		}
	}
}

// unhealthy reports whether the running container id failed its startup or
// liveness probe (lifecycle.Input.Unhealthy).
func (w *worker) unhealthy(id string) (probes.ProbeType, bool) {
	cfg := &w.m.cfg
	statusID := containerIDPrefix(cfg.RuntimeName) + id
	for _, t := range []probes.ProbeType{probes.Startup, probes.Liveness} {
		if r, ok := cfg.Probes.Result(statusID, t); ok && r == probes.Failure {
			return t, true
		}
	}
	return 0, false
}

func containerIDPrefix(runtime string) string { return runtime + "://" }

// event records an event on the container, if there is a recorder.
func (w *worker) event(pod *v1.Pod, container, eventType, reason, message string) {
	if rec := w.m.cfg.Recorder; rec != nil && pod != nil {
		rec.Eventf(probes.ContainerRef(pod, container), eventType, reason, "%s", message)
	}
}

// postStart runs c's postStart hook, if any, in the container just started
// (id). The container's status is not published until it returns, so it is
// not reported Running before the hook finished, as upstream. On failure it
// records FailedPostStartHook, kills the container and returns the message
// (the container's waiting message, with PostStartHookError).
func (w *worker) postStart(ctx context.Context, log *slog.Logger, pod *v1.Pod, c *v1.Container, id string, podIPs []string) (string, bool) {
	cfg := &w.m.cfg
	if cfg.Hooks == nil || c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return "", true
	}
	msg, err := cfg.Hooks.Run(ctx, pod, probes.Target{PodIP: first(podIPs), Container: c, ContainerID: id}, c.Lifecycle.PostStart)
	if err == nil {
		return "", true
	}
	if ctx.Err() != nil {
		return msg, false // the pod is being removed: its termination stops the container
	}
	log.Warn("postStart hook failed; killing the container", "id", id, "err", err)
	w.event(pod, c.Name, v1.EventTypeWarning, probes.ReasonFailedPostStartHook, msg)
	target := stopTarget{ID: id, Name: c.Name, Message: "FailedPostStartHook"}
	if err := w.stopContainers(ctx, pod, podIPs, []stopTarget{target}, gracePeriod(pod, nil)); err != nil {
		log.Warn("killing the container after its postStart hook failed", "id", id, "err", err)
	}
	return msg, false
}

// stopContainers stops containers in parallel. For each, the preStop hook
// (if the pod's spec has one) runs first, bounded by the grace period; then
// the stop signal is sent with what remains of the grace period (at least
// 2 s), and SIGKILL after that, as the kubelet's killContainer.
func (w *worker) stopContainers(ctx context.Context, pod *v1.Pod, podIPs []string, targets []stopTarget, grace time.Duration) error {
	var wg sync.WaitGroup
	errs := make([]error, len(targets))
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := grace
			if t.Grace > 0 {
				g = t.Grace
			}
			msg := t.Message
			if msg == "" {
				msg = "Stopping container " + t.Name
			}
			w.event(pod, t.Name, v1.EventTypeNormal, ReasonKilling, msg)
			g -= w.preStop(ctx, pod, podIPs, t, g)
			errs[i] = w.m.cfg.CRI.StopContainer(ctx, t.ID, max(g, minStopGrace))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// preStop runs the container's preStop hook, if any, cut off when grace
// ends, and returns the time it took.
func (w *worker) preStop(ctx context.Context, pod *v1.Pod, podIPs []string, t stopTarget, grace time.Duration) time.Duration {
	cfg := &w.m.cfg
	c := specContainer(pod, t.Name)
	if cfg.Hooks == nil || c == nil || c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return 0
	}
	// Wall time, as the context's deadline: the hook's time is taken from
	// the grace period the runtime is then given.
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := cfg.Hooks.Run(hctx, pod, probes.Target{PodIP: first(podIPs), Container: c, ContainerID: t.ID}, c.Lifecycle.PreStop)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-hctx.Done():
		err = hctx.Err() // an exec the runtime does not end in time is not waited for
	}
	if err != nil {
		cfg.Logger.Info("preStop hook failed or ran out of time", "pod", pod.Namespace+"/"+pod.Name, "container", t.Name, "err", err)
		w.event(pod, t.Name, v1.EventTypeWarning, probes.ReasonFailedPreStopHook, probes.PreStopFailedMessage)
	}
	return time.Since(start)
}

// specContainer finds a container of the pod's spec by name (nil pod or
// unknown name: nil).
func specContainer(pod *v1.Pod, name string) *v1.Container {
	if pod == nil {
		return nil
	}
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func first(ips []string) string {
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}
