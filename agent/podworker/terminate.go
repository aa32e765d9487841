package podworker

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/agent/source"
)

// terminate stops and removes everything the pod holds — containers within
// the grace period, then sandboxes, then what the pod hooks keep for it
// (log directory, volumes, per-pod files, cgroups, back-off, metrics,
// probes), then its status — and reports whether all of it is gone. Every
// step is idempotent, so a failed termination is simply run again.
func (w *worker) terminate(ctx context.Context, pod *v1.Pod) bool {
	cfg := &w.m.cfg
	log := cfg.Logger.With("uid", w.uid)
	if pod != nil {
		log = log.With("pod", pod.Namespace+"/"+pod.Name)
	}
	rt, err := cfg.Cache.GetNewerThan(ctx, w.uid, w.readAfter())
	if err != nil {
		log.Warn("reading the pod's runtime state failed", "err", err)
		return false
	}
	grace := gracePeriod(pod, rt)
	w.m.stopping(pod)
	if len(rt.Running()) > 0 {
		log.Info("stopping pod", "gracePeriod", grace)
	}
	err = w.killPod(ctx, pod, rt, grace)
	w.lastWrite = time.Now() // whatever of it succeeded changed the runtime
	if err != nil {
		log.Warn("stopping the pod failed", "err", err)
		w.podEvent(pod, v1.EventTypeWarning, ReasonFailedKillPod, "error killing pod: "+err.Error())
		return false
	}
	if old, published := cfg.Status.Status(w.uid); published && deletedInAPI(pod) &&
		old.Phase != v1.PodSucceeded && old.Phase != v1.PodFailed {
		// As the kubelet: the status of a deleted pod ends in a terminal
		// phase, from its stopped containers, before the deletion is
		// completed — what a finalizer holding the pod keeps showing.
		// Once (a retried termination finds the containers removed).
		stopped, err := cfg.Cache.GetNewerThan(ctx, w.uid, w.readAfter())
		if err != nil {
			log.Warn("reading the stopped pod's runtime state failed", "err", err)
			return false
		}
		w.publish(pod, stopped, true)
		rt = stopped
	}
	var errs []error
	for _, c := range rt.Containers {
		errs = append(errs, cfg.CRI.RemoveContainer(ctx, c.ID))
	}
	for _, sb := range rt.Sandboxes {
		errs = append(errs, cfg.CRI.RemovePodSandbox(ctx, sb.ID))
	}
	w.lastWrite = time.Now()
	if err := errors.Join(errs...); err != nil {
		log.Warn("removing the pod's containers failed", "err", err)
		return false
	}
	cfg.Cache.Forget(rt)
	ref := podRef{UID: w.uid, Name: rt.Name, Namespace: rt.Namespace, Pod: pod}
	if pod != nil {
		ref.Name, ref.Namespace = pod.Name, pod.Namespace
	}
	if err := w.m.teardown(ctx, ref); err != nil {
		log.Warn("cleaning up after the pod failed", "err", err)
		return false
	}
	if pod != nil {
		cfg.Status.Terminate(pod) // a pod deleted in the apiserver: the status sync deletes it
	} else {
		cfg.Status.Delete(w.uid)
	}
	log.Info("pod removed")
	return true
}

// deletedInAPI reports whether pod is one the apiserver is deleting (not a
// static pod, whose phase upstream leaves as it is).
func deletedInAPI(pod *v1.Pod) bool {
	return pod != nil && pod.DeletionTimestamp != nil && !source.IsStatic(pod)
}
