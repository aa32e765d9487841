package volumes

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/internal/errdefs"
)

// DefaultResyncPeriod is how often RunResync rewrites the running pods'
// configMap, secret, downwardAPI and projected volumes: as the agent's pod
// workers' resync (the kubelet's sync frequency is one minute, plus its
// object cache's TTL).
const DefaultResyncPeriod = 10 * time.Second

// PodLister returns the node's current pods, as the pod sources know them
// (their latest spec and metadata).
type PodLister func() ([]*v1.Pod, error)

// ListedPods is a PodLister over every pod of a lister (the API server
// pod source's, holding the pods bound to the node).
func ListedPods(lister corelisters.PodLister) PodLister {
	return func() ([]*v1.Pod, error) { return lister.List(labels.Everything()) }
}

// RunResync calls Resync, every period, for each pod pods returns that is
// not being deleted, so running pods see updated configMaps, secrets,
// labels and annotations (and renewed service account tokens) within a
// period. Pods whose volumes are not set up yet, or torn down already, are
// left alone by Resync. A volume that cannot be updated (its configMap or
// secret is gone, say) keeps its content; the failure is logged, recorded
// as a FailedMount event on the pod (Config.Recorder), as the kubelet does,
// and tried again at the next period. It returns nil when ctx ends.
func (m *Manager) RunResync(ctx context.Context, period time.Duration, pods PodLister) error {
	if period <= 0 {
		return fmt.Errorf("volumes: resync period %v must be positive: %w", period, errdefs.ErrInvalidArgument)
	}
	if pods == nil {
		return fmt.Errorf("volumes: RunResync needs a pod lister: %w", errdefs.ErrInvalidArgument)
	}
	for {
		timer := m.cfg.Clock.NewTimer(period)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		}
		m.resyncAll(ctx, pods)
	}
}

// resyncAll is one pass of RunResync.
func (m *Manager) resyncAll(ctx context.Context, pods PodLister) {
	list, err := pods()
	if err != nil {
		m.cfg.Logger.Warn("listing the pods to resync their volumes failed", "err", err)
		return
	}
	for _, pod := range list {
		if ctx.Err() != nil {
			return
		}
		if pod == nil || pod.DeletionTimestamp != nil || pod.UID == "" {
			continue
		}
		err := m.Resync(ctx, pod)
		if err == nil || ctx.Err() != nil {
			continue
		}
		m.cfg.Logger.Warn("updating the pod's volumes failed; they keep their content", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID, "err", err)
		if m.cfg.Recorder == nil {
			continue
		}
		for _, e := range unjoin(err) {
			m.cfg.Recorder.Eventf(pod, v1.EventTypeWarning, ReasonFailedMount, "%s", eventMessage(e))
		}
	}
}

// unjoin splits an errors.Join error into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
