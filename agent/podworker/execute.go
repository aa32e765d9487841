package podworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"berth/agent/containerconfig"
	"berth/agent/etchosts"
	"berth/agent/images"
	"berth/agent/lifecycle"
	"berth/agent/metrics"
	"berth/agent/podstate"
	"berth/agent/sandboxconfig"
	"berth/agent/status"
	"berth/agent/volumes"
	"berth/internal/errdefs"
)

// execute applies a plan, in this order:
//
//  1. KillPod: stop every running container (in parallel, within the grace
//     period), then every ready sandbox. When no sandbox is to be created,
//     that is all.
//  2. ContainersToKill: stop them (in parallel, within the grace period).
//  3. Set up the pod's volumes (idempotent); a failure ends the sync, the
//     containers waiting in ContainerCreating, as upstream, and is retried
//     when the volume manager's back-off allows (agent/volumes records the
//     FailedMount events).
//  4. CreateSandbox: wait for a start slot, run the pod hooks' Prepare
//     (the log directory), look the pod's runtime handler up (its
//     RuntimeClass), run the sandbox. A failure ends the sync.
//  5. EphemeralToStart, in spec order: pull, create, start (before init
//     containers, as upstream: a debugger runs even while one fails).
//  6. InitToStart: pull, create and start the next init container, and end
//     the sync (the next one runs when it exits).
//  7. ContainersToStart, in spec order: pull, create, start, postStart
//     hook; a failure of one is recorded for its status and does not stop
//     the others.
//
// Every stop runs the container's preStop hook first (stopContainers).
//
// It returns when a failed step should be retried (zero: at the next sync).
func (w *worker) execute(ctx context.Context, log *slog.Logger, pod *v1.Pod, rt *podstate.Pod, plan *lifecycle.Plan) time.Time {
	cfg := &w.m.cfg
	grace := gracePeriod(pod, rt)
	if plan.CreateSandbox && plan.SandboxID != "" {
		w.podEvent(pod, v1.EventTypeNormal, ReasonSandboxChanged, sandboxChangedMessage)
	}
	if plan.KillPod {
		if err := w.killPod(ctx, pod, rt, grace); err != nil {
			log.Warn("stopping the pod failed", "err", err)
			w.podEvent(pod, v1.EventTypeWarning, ReasonFailedKillPod, "error killing pod: "+err.Error())
			return cfg.Clock.Now().Add(time.Second)
		}
		if !plan.CreateSandbox {
			return time.Time{}
		}
	}
	if len(plan.ContainersToKill) > 0 {
		targets := make([]stopTarget, 0, len(plan.ContainersToKill))
		for _, k := range plan.ContainersToKill {
			log.Info("stopping container", "container", k.Name, "id", k.ID, "reason", k.Reason)
			targets = append(targets, stopTarget{ID: k.ID, Name: k.Name, Grace: k.GracePeriod, Message: k.Message})
		}
		if err := w.stopContainers(ctx, pod, sandboxIPs(rt), targets, grace); err != nil {
			log.Warn("stopping containers failed", "err", err)
			return cfg.Clock.Now().Add(time.Second)
		}
	}
	if plan.InitToStart == nil && len(plan.ContainersToStart) == 0 && len(plan.EphemeralToStart) == 0 && !plan.CreateSandbox {
		return time.Time{}
	}
	sbOpts := cfg.SandboxOptions
	sbOpts.Attempt = plan.Attempt
	sandboxCfg, dnsWarnings, err := sandboxconfig.BuildWithWarnings(pod, sbOpts)
	if err != nil {
		log.Error("the pod's sandbox config cannot be built", "err", err)
		if plan.CreateSandbox {
			w.podEvent(pod, v1.EventTypeWarning, ReasonFailedCreatePodSandBox, "Failed to create pod sandbox: "+err.Error())
		}
		for _, c := range pod.Spec.Containers {
			w.fail(c.Name, status.Failure{Reason: ReasonCreateContainerConfigError, Message: err.Error()})
		}
		return time.Time{}
	}
	w.dnsEvents(pod, dnsWarnings)
	var mounts *volumes.Mounts
	if cfg.Volumes != nil {
		if mounts, err = cfg.Volumes.SetUp(ctx, pod); err != nil {
			// agent/volumes recorded the FailedMount events (with its
			// back-off); the worker only looks again when it allows.
			log.Warn("the pod's volumes are not ready", "err", err)
			return volumeRetry(cfg.Clock.Now(), cfg.Volumes.RetryAt(pod.UID))
		}
	}
	sandboxID := plan.SandboxID
	var podIPs []string
	if sb := rt.LatestSandbox(); sb != nil && !plan.CreateSandbox {
		podIPs = sb.IPs
	}
	if plan.CreateSandbox {
		if !w.m.gate.acquire(ctx) {
			return time.Time{}
		}
		defer w.m.gate.release()
		if _, terminating := w.desired(); terminating {
			return time.Time{} // removed while it waited for its turn
		}
		if cfg.NetworkReady != nil && !pod.Spec.HostNetwork {
			if err := cfg.NetworkReady(); err != nil {
				log.Warn("waiting for the pod network", "err", err)
				w.podEvent(pod, v1.EventTypeWarning, ReasonNetworkNotReady, networkNotReadyMessage+": "+err.Error())
				return cfg.Clock.Now().Add(time.Second)
			}
		}
		if err := w.m.prepare(ctx, pod); err != nil {
			log.Error("preparing the node for the pod failed", "err", err)
			return cfg.Clock.Now().Add(time.Second)
		}
		cfg.Metrics.PodStarted() // as the kubelet: counted when attempted
		handler := cfg.RuntimeHandler
		if cfg.PodRuntimeHandler != nil {
			if handler, err = cfg.PodRuntimeHandler(pod); err != nil {
				log.Error("the pod's runtime handler is unknown", "runtimeClassName", pod.Spec.RuntimeClassName, "err", err)
				w.podEvent(pod, v1.EventTypeWarning, ReasonFailedCreatePodSandBox, "Failed to create pod sandbox: "+err.Error())
				return cfg.Clock.Now().Add(time.Second)
			}
		}
		id, err := cfg.CRI.RunPodSandbox(ctx, sandboxCfg, handler)
		if err != nil {
			log.Error("creating the pod sandbox failed", "err", err)
			if _, terminating := w.desired(); !terminating && ctx.Err() == nil {
				w.podEvent(pod, v1.EventTypeWarning, ReasonFailedCreatePodSandBox, "Failed to create pod sandbox: "+grpcMessage(err))
			}
			return cfg.Clock.Now().Add(time.Second)
		}
		log.Debug("sandbox running", "sandbox", id, "attempt", plan.Attempt)
		sandboxID = id
		// The pod's IPs feed the containers' downward-API variables.
		st, err := cfg.CRI.PodSandboxStatus(ctx, id, false)
		if err != nil {
			log.Error("reading the new sandbox's status failed", "sandbox", id, "err", err)
			w.podEvent(pod, v1.EventTypeWarning, ReasonFailedPodSandBoxStatus, "Unable to get pod sandbox status: "+grpcMessage(err))
			return cfg.Clock.Now().Add(time.Second)
		}
		podIPs = podstate.SandboxFromCRI(&runtimeapi.PodSandbox{Id: id}, st.GetStatus()).IPs
	}
	var retry time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (retry.IsZero() || t.Before(retry)) {
			retry = t
		}
	}
	for i := range plan.EphemeralToStart {
		earliest(w.startContainer(ctx, log, pod, sandboxID, sandboxCfg, podIPs, mounts, &plan.EphemeralToStart[i]))
	}
	if plan.InitToStart != nil {
		earliest(w.startContainer(ctx, log, pod, sandboxID, sandboxCfg, podIPs, mounts, plan.InitToStart))
		return retry
	}
	for i := range plan.ContainersToStart {
		earliest(w.startContainer(ctx, log, pod, sandboxID, sandboxCfg, podIPs, mounts, &plan.ContainersToStart[i]))
	}
	return retry
}

// envRetry is when a container whose environment could not be resolved (a
// ConfigMap, Secret or key missing) is tried again.
const envRetry = 2 * time.Second

// volumeRetryDefault is when a failed volume set-up is looked at again when
// the volume manager names no time (a pod it rejects as a whole, or no
// back-off configured).
const volumeRetryDefault = 2 * time.Second

// volumeRetry is when to set the pod's volumes up again after a failure:
// when the volume manager's back-off lets the next attempt through
// (retryAt), else volumeRetryDefault from now.
func volumeRetry(now, retryAt time.Time) time.Time {
	if retryAt.After(now) {
		return retryAt
	}
	return now.Add(volumeRetryDefault)
}

// startContainer pulls, creates and starts one container, recording a
// failure for its status; it returns when a failure should be retried.
func (w *worker) startContainer(ctx context.Context, log *slog.Logger, pod *v1.Pod, sandboxID string, sandboxCfg *runtimeapi.PodSandboxConfig, podIPs []string, mounts *volumes.Mounts, s *lifecycle.Start) time.Time {
	cfg := &w.m.cfg
	c := s.Container
	log = log.With("container", c.Name)
	var auths []*runtimeapi.AuthConfig
	if cfg.PullCredentials != nil {
		auths = cfg.PullCredentials(ctx, pod, c.Image)
	}
	pullStart := cfg.Clock.Now()
	res, err := cfg.Images.EnsureImage(ctx, images.Request{PodUID: pod.UID, Image: c.Image, PullPolicy: c.ImagePullPolicy, SandboxConfig: sandboxCfg, Credentials: auths})
	for _, ev := range res.Events {
		log.Debug(ev.Message, "event", ev.Reason)
		w.event(pod, c.Name, ev.Type, ev.Reason, ev.Message)
		if ev.Reason == images.EventPulling {
			// The pull's time is left out of the pod startup SLI.
			cfg.Metrics.ImagePullStarted(pod.UID, pullStart)
			if err == nil {
				cfg.Metrics.ImagePullFinished(pod.UID, cfg.Clock.Now())
			}
		}
	}
	if err != nil {
		var ie *images.Error
		if !errors.As(err, &ie) {
			ie = &images.Error{Reason: "ErrImagePull", Message: err.Error()}
		}
		log.Warn("image not available", "image", c.Image, "reason", ie.Reason, "message", ie.Message)
		w.failedEvent(pod, c.Name, ie.Reason)
		w.fail(c.Name, status.Failure{Reason: ie.Reason, Message: ie.Message})
		// Look again when the pull back-off ends; after a failed pull, at
		// once (a second later), to show the back-off that now runs.
		return cfg.Clock.Now().Add(max(ie.RetryAfter, time.Second))
	}
	opts := cfg.ContainerOptions
	opts.RestartCount = s.RestartCount
	opts.TargetContainerID = s.TargetID
	if s.TargetMissing != "" {
		// As upstream: the debugger's target must exist.
		err = fmt.Errorf("unable to find target container %s", s.TargetMissing)
	}
	opts.ImageRef = res.ImageRef
	opts.PodIPs = podIPs
	if err == nil && c.TerminationMessagePath != "" {
		opts.TerminationMessageHostPath, err = w.m.termination.file(pod, c, s.RestartCount)
	}
	if err == nil {
		err = w.imageUser(ctx, pod, c, res.ImageRef, &opts)
	}
	if err == nil && cfg.Env != nil {
		if err = cfg.Env.Fill(ctx, pod, c, &opts); err != nil {
			// A missing ConfigMap, Secret or key may appear: look again.
			log.Warn("the container's environment cannot be resolved", "err", err)
			w.failedEvent(pod, c.Name, err.Error())
			w.fail(c.Name, status.Failure{Reason: ReasonCreateContainerConfigError, Message: err.Error()})
			return cfg.Clock.Now().Add(envRetry)
		}
	}
	if err == nil {
		opts.Mounts, err = volumeMounts(pod, c, mounts, opts)
	}
	if err == nil && etchosts.ShouldMount(pod, c, podIPs) {
		err = w.m.etcHosts.mount(pod, podIPs, &opts)
	}
	var ccfg *runtimeapi.ContainerConfig
	if err == nil {
		ccfg, err = containerconfig.Build(pod, c, opts)
	}
	if err != nil {
		log.Error("the container's config cannot be built", "err", err)
		w.failedEvent(pod, c.Name, statusMessage(err))
		w.fail(c.Name, status.Failure{Reason: ReasonCreateContainerConfigError, Message: err.Error()})
		return time.Time{}
	}
	id, err := cfg.CRI.CreateContainer(ctx, sandboxID, ccfg, sandboxCfg)
	if err != nil {
		log.Error("creating the container failed", "err", err)
		w.failedEvent(pod, c.Name, statusMessage(err))
		w.fail(c.Name, status.Failure{Reason: ReasonCreateContainerError, Message: err.Error()})
		return cfg.Clock.Now().Add(time.Second)
	}
	w.event(pod, c.Name, v1.EventTypeNormal, ReasonCreated, "Created container: "+c.Name)
	if !s.BackOffSince.IsZero() {
		cfg.BackOff.Next(s.BackOffKey, s.BackOffSince)
	}
	containerType := metrics.ContainerTypeContainer
	switch {
	case s.Init:
		containerType = metrics.ContainerTypeInitContainer
	case s.Ephemeral:
		containerType = metrics.ContainerTypeEphemeralContainer
	}
	cfg.Metrics.ContainerStarted(containerType) // as the kubelet: counted when attempted
	if err := cfg.CRI.StartContainer(ctx, id); err != nil {
		log.Error("starting the container failed", "id", id, "err", err)
		w.failedEvent(pod, c.Name, statusMessage(err))
		w.fail(c.Name, status.Failure{Reason: ReasonRunContainerError, Message: err.Error()})
		return time.Time{}
	}
	// As the kubelet: Started is recorded when the runtime started the
	// container, before its postStart hook runs.
	w.event(pod, c.Name, v1.EventTypeNormal, ReasonStarted, "Started container "+c.Name)
	if msg, ok := w.postStart(ctx, log, pod, c, id, podIPs); !ok {
		w.fail(c.Name, status.Failure{Reason: ReasonPostStartHookError, Message: msg})
		return time.Time{}
	}
	delete(w.failures, c.Name)
	log.Debug("container started", "id", id, "restartCount", s.RestartCount)
	return time.Time{}
}

// volumeMounts are the CRI mounts of c's volumeMounts; subPathExpr is
// expanded with the container's environment.
func volumeMounts(pod *v1.Pod, c *v1.Container, mounts *volumes.Mounts, opts containerconfig.Options) ([]*runtimeapi.Mount, error) {
	if len(c.VolumeMounts) == 0 {
		return nil, nil
	}
	if mounts == nil {
		return nil, fmt.Errorf("container %q: volumeMounts: volumes are not supported by this agent: %w", c.Name, errdefs.ErrUnimplemented)
	}
	var env map[string]string
	for _, vm := range c.VolumeMounts {
		if vm.SubPathExpr == "" {
			continue
		}
		vars, err := containerconfig.Env(pod, c, opts)
		if err != nil {
			return nil, err
		}
		env = make(map[string]string, len(vars))
		for _, v := range vars {
			env[v.Name] = v.Value
		}
		break
	}
	return mounts.Container(c, env)
}

// imageUser reads the image's configured user when the container's
// runAsNonRoot check or runAsUser default needs it. As upstream, an image
// that names no user runs as root (uid 0).
func (w *worker) imageUser(ctx context.Context, pod *v1.Pod, c *v1.Container, imageRef string, opts *containerconfig.Options) error {
	sc := containerconfig.EffectiveSecurityContext(pod, c)
	if sc == nil || sc.RunAsUser != nil {
		return nil
	}
	img, err := w.m.cfg.CRI.ImageStatus(ctx, imageRef)
	if err != nil || img == nil {
		return err
	}
	switch {
	case img.GetUid() != nil:
		uid := img.GetUid().GetValue()
		opts.ImageUID = &uid
	case img.GetUsername() != "":
		opts.ImageUser = img.GetUsername()
	default:
		root := int64(0)
		opts.ImageUID = &root
	}
	return nil
}

// killPod stops the pod's running containers (running their preStop hooks
// when pod is known), then its ready sandboxes.
func (w *worker) killPod(ctx context.Context, pod *v1.Pod, rt *podstate.Pod, grace time.Duration) error {
	var targets []stopTarget
	for _, c := range rt.Running() {
		targets = append(targets, stopTarget{ID: c.ID, Name: c.Name})
	}
	if err := w.stopContainers(ctx, pod, sandboxIPs(rt), targets, grace); err != nil {
		return err
	}
	for _, sb := range rt.Sandboxes {
		if !sb.Ready {
			continue
		}
		if err := w.m.cfg.CRI.StopPodSandbox(ctx, sb.ID); err != nil {
			return err
		}
	}
	return nil
}

// sandboxIPs are the IPs of the pod's newest sandbox.
func sandboxIPs(rt *podstate.Pod) []string {
	if sb := rt.LatestSandbox(); sb != nil {
		return sb.IPs
	}
	return nil
}
