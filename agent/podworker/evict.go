package podworker

import (
	"context"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"berth/agent/podstate"
	"berth/agent/status"
)

// Eviction is the node's decision to end a pod for its own sake (the
// eviction manager's, under resource pressure): the pod's containers are
// stopped within GracePeriod and never started again, its volumes are torn
// down, and it is Failed with Reason and Message and, if set, Condition
// (DisruptionTarget), as the kubelet's killPod with a status function.
type Eviction struct {
	GracePeriod     time.Duration
	Reason, Message string
	Condition       *v1.PodCondition
}

// Evict ends the pod uid as e says; it reports whether a worker runs the
// pod. It does not wait: Stopped reports when the pod is down.
func (m *Manager) Evict(uid types.UID, e Eviction) bool {
	w := m.worker(uid, false)
	if w == nil {
		return false
	}
	w.mu.Lock()
	if w.pod == nil || w.terminating || w.evicted != nil {
		w.mu.Unlock()
		return w.evicted != nil
	}
	w.evicted = &e
	w.stoppedEvicted = false
	w.mu.Unlock()
	w.poke()
	return true
}

// Stopped reports whether the pod uid is no longer running on the node:
// no worker runs it, or its eviction is done (containers stopped, volumes
// torn down, the Failed status published).
func (m *Manager) Stopped(uid types.UID) bool {
	w := m.worker(uid, false)
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dead || w.stoppedEvicted
}

func (w *worker) eviction() *Eviction {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.evicted
}

// syncEvicted is the sync of an evicted pod: it stops what still runs
// (the preStop hooks within the eviction's grace period), then tears the
// volumes down and publishes the pod Failed. It returns when to sync again.
func (w *worker) syncEvicted(ctx context.Context, log *slog.Logger, pod *v1.Pod, rt *podstate.Pod, e *Eviction) time.Duration {
	cfg := &w.m.cfg
	if w.rejected == nil || w.rejected.Reason != e.Reason {
		w.rejected = &status.Failure{Reason: e.Reason, Message: e.Message}
		if e.Condition != nil {
			w.conditions = []v1.PodCondition{*e.Condition}
		}
	}
	if running(rt) {
		log.Info("evicting pod", "gracePeriod", e.GracePeriod, "reason", e.Reason)
		w.m.stopping(pod)
		err := w.killPod(ctx, pod, rt, e.GracePeriod)
		w.lastWrite = time.Now()
		if err != nil {
			log.Warn("stopping the evicted pod failed", "err", err)
			w.podEvent(pod, v1.EventTypeWarning, ReasonFailedKillPod, "error killing pod: "+err.Error())
			return time.Second
		}
		return 0 // publish from the stopped state
	}
	if cfg.Volumes != nil {
		// As the kubelet for a terminated pod: its volumes (and what an
		// emptyDir holds) go now, the pod object stays.
		if err := cfg.Volumes.TearDown(ctx, pod.UID); err != nil {
			log.Warn("tearing down the evicted pod's volumes failed", "err", err)
			return time.Second
		}
	}
	w.publish(pod, rt, false)
	w.mu.Lock()
	w.stoppedEvicted = true
	w.mu.Unlock()
	return cfg.Resync
}

// running reports whether anything of the pod still runs: a container or
// a ready sandbox.
func running(rt *podstate.Pod) bool {
	if rt == nil {
		return false
	}
	if len(rt.Running()) > 0 {
		return true
	}
	for _, sb := range rt.Sandboxes {
		if sb.Ready {
			return true
		}
	}
	return false
}
