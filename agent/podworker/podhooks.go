package podworker

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A pod hook is one concern of a pod's life on the node (its volumes, log
// directory, cgroups, …), in a file of its own (hook_*.go), implementing
// the phases below it takes part in; each asserts them at compile time
// (var _ TeardownHook = (*volumesHook)(nil)). The worker runs every hook's
// phase in the order of Manager.hooks.

// podRef names a pod being torn down. Pod is nil for an orphan, whose spec
// the agent never had (left from a previous run); Name and Namespace then
// come from the runtime's labels and may be empty.
type podRef struct {
	UID             types.UID
	Name, Namespace string
	Pod             *v1.Pod
}

// PrepareHook readies the node for a pod before its sandbox is created.
// Prepare runs at every sync that creates a sandbox and must be idempotent;
// a failure ends the sync, retried a second later.
type PrepareHook interface {
	Prepare(ctx context.Context, pod *v1.Pod) error
}

// StopHook is told that a pod is about to be stopped (it is terminating),
// before its containers are.
type StopHook interface {
	Stopping(pod *v1.Pod)
}

// TeardownHook removes what the node keeps for a pod, once the pod's
// containers and sandboxes are gone. Teardown is idempotent and runs at
// every attempt to complete a termination, whether or not Prepare ever ran
// (the pod may come from a previous run of the agent); a failure makes the
// worker try the whole termination again.
type TeardownHook interface {
	Teardown(ctx context.Context, pod podRef) error
}

// prepare runs every hook's Prepare, stopping at the first failure.
func (m *Manager) prepare(ctx context.Context, pod *v1.Pod) error {
	for _, h := range m.hooks {
		if p, ok := h.(PrepareHook); ok {
			if err := p.Prepare(ctx, pod); err != nil {
				return err
			}
		}
	}
	return nil
}

// stopping tells every StopHook the pod is about to stop.
func (m *Manager) stopping(pod *v1.Pod) {
	for _, h := range m.hooks {
		if s, ok := h.(StopHook); ok {
			s.Stopping(pod)
		}
	}
}

// teardown runs every hook's Teardown, each whatever the others did, and
// returns their failures.
func (m *Manager) teardown(ctx context.Context, pod podRef) error {
	var errs []error
	for _, h := range m.hooks {
		if t, ok := h.(TeardownHook); ok {
			errs = append(errs, t.Teardown(ctx, pod))
		}
	}
	return errors.Join(errs...)
}

// newHooks returns the pod hooks of cfg, in the order their phases run:
// teardown removes the log directory, then the files under the pod's
// directory (volumes first: agent/volumes never deletes across a mount),
// the directory itself, the cgroups, and last what the agent remembers of
// the pod (back-off, metrics, probes).
func newHooks(cfg *Config, termination *terminationMessagesHook, etcHosts *etcHostsHook) []any {
	hooks := []any{&logDirHook{dir: cfg.SandboxOptions.PodLogDir}}
	if cfg.Volumes != nil {
		hooks = append(hooks, &volumesHook{vols: cfg.Volumes})
	}
	hooks = append(hooks,
		termination,
		etcHosts,
		&podDirHook{root: cfg.RootDir, log: cfg.Logger},
	)
	if cfg.PodCleanup != nil {
		hooks = append(hooks, &cgroupsHook{remove: cfg.PodCleanup})
	}
	hooks = append(hooks, &backOffHook{tracker: cfg.BackOff}, &metricsHook{metrics: cfg.Metrics})
	if cfg.Probes != nil {
		hooks = append(hooks, &probesHook{probes: cfg.Probes})
	}
	return hooks
}
