package podworker

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"

	"berth/agent/backoff"
	"berth/agent/etchosts"
	"berth/agent/sandboxconfig"
	"berth/cri"
)

// terminate stops and removes everything the pod holds — containers within
// the grace period, then sandboxes, log directory, per-pod files, back-off
// history, status — and reports whether all of it is gone. Every step is
// idempotent, so a failed termination is simply run again.
func (w *worker) terminate(ctx context.Context, pod *v1.Pod) bool {
	cfg := &w.m.cfg
	log := cfg.Logger.With("uid", w.uid)
	if pod != nil {
		log = log.With("pod", pod.Namespace+"/"+pod.Name)
	}
	rt, err := cfg.Cache.GetNewerThan(ctx, w.uid, w.lastWrite)
	if err != nil {
		log.Warn("reading the pod's runtime state failed", "err", err)
		return false
	}
	grace := gracePeriod(pod, rt)
	if pod != nil && cfg.Probes != nil {
		cfg.Probes.StopLivenessAndStartup(pod)
	}
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
	name, ns := rt.Name, rt.Namespace
	if pod != nil {
		name, ns = pod.Name, pod.Namespace
	}
	if name != "" {
		errs = append(errs, os.RemoveAll(sandboxconfig.LogDirectory(cfg.SandboxOptions.PodLogDir, ns, name, w.uid)))
	}
	errs = append(errs, w.removePodDir(ctx))
	if cfg.PodCleanup != nil {
		errs = append(errs, cfg.PodCleanup(w.uid, pod))
	}
	if err := errors.Join(errs...); err != nil {
		log.Warn("cleaning up after the pod failed", "err", err)
		return false
	}
	if pod != nil {
		for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				cfg.BackOff.Forget(backoff.Key(string(w.uid), list[i].Name, cri.ContainerHash(&list[i])))
			}
		}
	}
	cfg.Status.Delete(w.uid)
	cfg.Metrics.ForgetPodStartup(w.uid)
	w.forgetProbes()
	log.Info("pod removed")
	return true
}

// removePodDir removes <root>/pods/<uid>: the volumes first (torn down by
// agent/volumes, which never deletes across a mount), then the agent's own
// files (termination messages, the managed /etc/hosts), then the directory.
// A directory that still holds something else is left, with a warning.
func (w *worker) removePodDir(ctx context.Context) error {
	cfg := &w.m.cfg
	dir := filepath.Join(cfg.RootDir, "pods", string(w.uid))
	if cfg.Volumes != nil {
		if err := cfg.Volumes.TearDown(ctx, w.uid); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "containers")); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, etchosts.FileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		cfg.Logger.Warn("the pod's directory holds unknown files; leaving it", "dir", dir, "err", err)
	}
	return nil
}
