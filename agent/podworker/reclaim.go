package podworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	v1 "k8s.io/api/core/v1"

	"berth/agent/podstate"
)

// DeleteAllUnusedContainers removes what the runtime still holds of the
// pods that finished (Succeeded or Failed, nothing running): their dead
// containers and sandboxes, as the kubelet's container GC does for the
// eviction manager under disk pressure (DeleteAllUnusedContainers: the
// runtime of terminated pods removed; the pods' last statuses stand). Each
// pod's worker does its own (the worker alone acts on its pod's runtime);
// it returns once they all did, or when ctx ends.
func (m *Manager) DeleteAllUnusedContainers(ctx context.Context) error {
	m.mu.Lock()
	workers := make([]*worker, 0, len(m.workers))
	for _, w := range m.workers {
		workers = append(workers, w)
	}
	m.mu.Unlock()
	var asked []chan error
	for _, w := range workers {
		w.mu.Lock()
		pod, busy := w.pod, w.dead || w.terminating
		if pod == nil || busy || !m.finished(pod) {
			w.mu.Unlock()
			continue
		}
		done := make(chan error, 1)
		w.reclaims = append(w.reclaims, done)
		asked = append(asked, done)
		w.mu.Unlock()
		w.poke()
	}
	var errs []error
	for _, done := range asked {
		select {
		case err := <-done:
			errs = append(errs, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

// finished reports whether the pod's published phase is terminal.
func (m *Manager) finished(pod *v1.Pod) bool {
	st, ok := m.cfg.Status.Status(pod.UID)
	return ok && terminal(st.Phase)
}

// gone reports whether the pod finished — by its published phase or, for a
// pod a restarted agent finds, the apiserver's — and the runtime holds
// nothing of it: nothing may run again and the last status stands.
func (w *worker) gone(pod *v1.Pod, rt *podstate.Pod) bool {
	if rt != nil && (len(rt.Sandboxes) > 0 || len(rt.Containers) > 0) {
		return false
	}
	return terminal(pod.Status.Phase) || w.m.finished(pod)
}

// takeReclaims returns the pending DeleteAllUnusedContainers requests.
func (w *worker) takeReclaims() []chan error {
	w.mu.Lock()
	defer w.mu.Unlock()
	reqs := w.reclaims
	w.reclaims = nil
	return reqs
}

// reclaim answers the pending DeleteAllUnusedContainers requests: a
// finished pod with no container running loses its containers and
// sandboxes.
// It reports whether it removed anything.
func (w *worker) reclaim(ctx context.Context, log *slog.Logger, pod *v1.Pod, rt *podstate.Pod) bool {
	reqs := w.takeReclaims()
	if len(reqs) == 0 {
		return false
	}
	var err error
	removed := false
	if rt != nil && w.m.finished(pod) && len(rt.Running()) == 0 {
		removed, err = w.removeRuntime(ctx, rt)
		if err != nil {
			log.Warn("removing a finished pod's containers failed", "err", err)
		}
	}
	for _, done := range reqs {
		done <- err
	}
	return removed
}

// removeRuntime removes the pod's containers, then its sandboxes (stopped
// first: their network goes with them).
func (w *worker) removeRuntime(ctx context.Context, rt *podstate.Pod) (removed bool, err error) {
	cri := w.m.cfg.CRI
	for _, c := range rt.Containers {
		if e := cri.RemoveContainer(ctx, c.ID); e != nil {
			err = errors.Join(err, fmt.Errorf("container %s (%s): %w", c.Name, c.ID, e))
			continue
		}
		removed = true
	}
	if err != nil {
		return removed, err // a sandbox goes once its containers are gone
	}
	for _, sb := range rt.Sandboxes {
		if sb.Ready {
			if e := cri.StopPodSandbox(ctx, sb.ID); e != nil {
				err = errors.Join(err, fmt.Errorf("sandbox %s: %w", sb.ID, e))
				continue
			}
		}
		if e := cri.RemovePodSandbox(ctx, sb.ID); e != nil {
			err = errors.Join(err, fmt.Errorf("sandbox %s: %w", sb.ID, e))
			continue
		}
		removed = true
	}
	return removed, err
}
