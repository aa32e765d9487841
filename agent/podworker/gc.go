package podworker

import (
	"context"
	"log/slog"

	"berth/agent/podstate"
)

// collectGarbage removes the pod's dead containers beyond the newest dead one
// per container name (that one feeds the status's lastState)
// and its dead sandboxes other than the newest once they hold no container,
// as the kubelet's container GC does with one dead container kept per
// container. It reports whether it removed anything.
func (w *worker) collectGarbage(ctx context.Context, log *slog.Logger, rt *podstate.Pod) (removed bool) {
	cri := w.m.cfg.CRI
	seen := map[string]bool{} // a dead container of the name is kept
	used := map[string]bool{}
	for _, c := range rt.Containers {
		if c.State != podstate.ContainerExited || !seen[c.Name] {
			seen[c.Name] = seen[c.Name] || c.State == podstate.ContainerExited
			used[c.SandboxID] = true
			continue
		}
		removed = true
		if err := cri.RemoveContainer(ctx, c.ID); err != nil {
			log.Warn("removing a dead container failed", "container", c.Name, "id", c.ID, "err", err)
			used[c.SandboxID] = true
		}
	}
	for i, sb := range rt.Sandboxes {
		if i == 0 || sb.Ready || used[sb.ID] {
			continue
		}
		removed = true
		if err := cri.RemovePodSandbox(ctx, sb.ID); err != nil {
			log.Warn("removing a dead sandbox failed", "sandbox", sb.ID, "err", err)
		}
	}
	return removed
}
