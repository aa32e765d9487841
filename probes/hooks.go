package probes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// PreStopFailedMessage is the message of the FailedPreStopHook event: the
// kubelet does not put the hook's output in it, so no secret leaks.
const PreStopFailedMessage = "PreStopHook failed"

// ErrSleepInterrupted is the error of a sleep hook cut off by its context
// (the grace period ended or the container went away first).
var ErrSleepInterrupted = errors.New("container terminated before sleep hook finished")

// HookConfig configures a HookRunner.
type HookConfig struct {
	// Exec runs exec hooks (CRI ExecSync); *cri.Client satisfies it. Required.
	Exec Execer
	// HTTP sends httpGet hooks; nil: a new HTTPGetter (share the Manager's).
	HTTP *HTTPGetter
	// Recorder gets the LifecycleHTTPFallback event; nil: none.
	Recorder EventRecorder
	// Logger logs hook failures; nil: discarded.
	Logger *slog.Logger
	// Clock times sleep hooks; nil: the real clock.
	Clock clock.Clock
}

// HookRunner runs postStart and preStop handlers: exec, httpGet and sleep.
// It is safe for concurrent use.
type HookRunner struct {
	exec  Execer
	http  *HTTPGetter
	rec   EventRecorder
	log   *slog.Logger
	clock clock.Clock
}

// NewHookRunner returns a HookRunner.
func NewHookRunner(cfg HookConfig) (*HookRunner, error) {
	if cfg.Exec == nil {
		return nil, fmt.Errorf("hook runner config: Exec: required (the CRI client): %w", errdefs.ErrInvalidArgument)
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
	return &HookRunner{exec: cfg.Exec, http: cfg.HTTP, rec: cfg.Recorder, log: cfg.Logger, clock: cfg.Clock}, nil
}

// Run runs handler for the container and returns when it is done or ctx
// ends: the caller bounds a preStop hook with the grace period's deadline,
// and a postStart hook with the container's life. t.PodIP is the host of an
// httpGet hook that names none.
//
// On failure it returns the kubelet's message for the FailedPostStartHook
// event, e.g. `Exec lifecycle hook ([sh -c exit 3]) for Container "app" in
// Pod "web_default(uid)" failed - error: command 'sh -c exit 3' exited with
// 3: <stderr>, message: "<stdout+stderr>"`, and the error. A preStop
// failure is reported with PreStopFailedMessage instead.
func (h *HookRunner) Run(ctx context.Context, pod *v1.Pod, t Target, handler *v1.LifecycleHandler) (string, error) {
	name := ""
	if t.Container != nil {
		name = t.Container.Name
	}
	switch {
	case handler == nil:
		err := fmt.Errorf("invalid handler: none: %w", errdefs.ErrInvalidArgument)
		return "Cannot run handler: " + err.Error(), err
	case handler.Exec != nil:
		var env []v1.EnvVar
		if t.Container != nil {
			env = t.Container.Env
		}
		cmd := expandCommand(handler.Exec.Command, env)
		output, err := h.runExec(ctx, runtimeID(t.ContainerID), cmd)
		if err != nil {
			msg := fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", handler.Exec.Command, name, FormatPod(pod), err, output)
			h.log.Info("exec lifecycle hook failed", "pod", pod.Name, "namespace", pod.Namespace, "container", name, "err", err)
			return msg, err
		}
		return "", nil
	case handler.HTTPGet != nil:
		err := h.runHTTP(ctx, pod, t, handler.HTTPGet)
		if err != nil {
			msg := fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", handler.HTTPGet.Path, name, FormatPod(pod), err)
			h.log.Info("http lifecycle hook failed", "pod", pod.Name, "namespace", pod.Namespace, "container", name, "err", err)
			return msg, err
		}
		return "", nil
	case handler.Sleep != nil:
		if err := h.runSleep(ctx, handler.Sleep.Seconds); err != nil {
			msg := fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v", handler.Sleep.Seconds, name, FormatPod(pod), err)
			return msg, err
		}
		return "", nil
	}
	err := fmt.Errorf("invalid handler: %v: %w", handler, errdefs.ErrInvalidArgument)
	return "Cannot run handler: " + err.Error(), err
}

// ExitError is an exec hook's command that exited non-zero.
type ExitError struct {
	// Cmd is the command as run.
	Cmd []string
	// Code is its exit code.
	Code int32
	// Stderr is what it wrote to stderr (at most 10 KiB).
	Stderr string
}

// Error has the kubelet's shape: command '<cmd>' exited with <code>: <stderr>.
func (e *ExitError) Error() string {
	return fmt.Sprintf("command '%s' exited with %d: %s", strings.Join(e.Cmd, " "), e.Code, e.Stderr)
}

// runExec runs an exec hook with no timeout of its own: ctx bounds it. It
// returns stdout then stderr (at most 10 KiB).
func (h *HookRunner) runExec(ctx context.Context, id string, cmd []string) (string, error) {
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		// Tell the runtime too, so it kills the command when the time is up.
		timeout = max(time.Until(dl).Truncate(time.Second), time.Second)
	}
	stdout, stderr, code, err := h.exec.ExecSync(ctx, id, cmd, timeout)
	if err != nil {
		return "", fmt.Errorf("exec in container %s: %w", id, err)
	}
	out := combinedOutput(stdout, stderr)
	if code != 0 {
		return out, &ExitError{Cmd: cmd, Code: code, Stderr: string(stderr[:min(len(stderr), maxOutputLength)])}
	}
	return out, nil
}

// runHTTP sends an httpGet hook. As the kubelet does, any answer is success;
// an HTTPS hook answered in plain HTTP is retried over HTTP, with a
// LifecycleHTTPFallback event.
func (h *HookRunner) runHTTP(ctx context.Context, pod *v1.Pod, t Target, action *v1.HTTPGetAction) error {
	req, err := NewHTTPRequest(action, t.Container, t.PodIP, PurposeLifecycle)
	if err != nil {
		return err
	}
	fellBack, err := h.http.Hook(ctx, req)
	if fellBack && h.rec != nil {
		h.rec.Eventf(pod, v1.EventTypeWarning, ReasonLifecycleHTTPFallback,
			"request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", req.URL.Host)
	}
	return err
}

// runSleep waits seconds on the clock, or fails when ctx ends first.
func (h *HookRunner) runSleep(ctx context.Context, seconds int64) error {
	if seconds <= 0 {
		return nil
	}
	timer := h.clock.NewTimer(time.Duration(seconds) * time.Second)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ErrSleepInterrupted
	case <-timer.C():
		return nil
	}
}
