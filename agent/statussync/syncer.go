// Package statussync writes the agent's pod statuses to the apiserver
// (pods/status), as the kubelet's status manager does: for pods the
// apiserver holds under the same UID, and for static pods onto their
// mirror pods (matched by the config hash), only when the agent's status
// changed since the last write (the status manager versions each pod's
// status) and differs from the apiserver's, as a strategic merge patch
// carrying the pod's UID so a write never lands on a pod recreated under
// the same name. Conditions the agent does not own (PodScheduled,
// readiness gates, …) are kept. Each status written is handed to the
// metrics' pod startup tracker (Config.Metrics).
//
// It also completes graceful deletion, as the kubelet's status manager: a pod
// deleted in the apiserver whose worker has stopped and removed everything
// (status.Manager.Terminated) is deleted with grace period 0, on the
// precondition of its UID.
//
// It syncs when the status manager reports a change, and, while something
// could not be written yet (the pod not in the informer's cache yet, a failed
// request), again every Period.
package statussync

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"berth/agent/metrics"
	"berth/agent/source"
	"berth/agent/status"
	"berth/internal/errdefs"
)

// DefaultPeriod is how soon what could not be written is tried again.
const DefaultPeriod = 250 * time.Millisecond

// agentConditions are the pod conditions the agent computes.
var agentConditions = map[v1.PodConditionType]bool{
	v1.PodReadyToStartContainers: true, v1.PodInitialized: true, v1.ContainersReady: true, v1.PodReady: true,
}

// Config configures a Syncer. Client, Status and Pods are required.
type Config struct {
	Client kubernetes.Interface
	Status *status.Manager
	// Pods reads the apiserver's copies of the node's pods (the pod
	// source's informer cache).
	Pods corelisters.PodLister
	// Period; default DefaultPeriod.
	Period time.Duration
	Logger *slog.Logger
	// Metrics is told each status written (the pod startup SLI counts
	// from the write of a status with every container started); optional.
	Metrics *metrics.Metrics
}

// Syncer writes pod statuses to the apiserver.
type Syncer struct {
	cfg     Config
	written map[types.UID]uint64 // by apiserver pod UID: the status manager's version last written
}

// New validates cfg.
func New(cfg Config) (*Syncer, error) {
	switch {
	case cfg.Client == nil:
		return nil, fmt.Errorf("statussync: Config.Client is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Status == nil:
		return nil, fmt.Errorf("statussync: Config.Status is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Pods == nil:
		return nil, fmt.Errorf("statussync: Config.Pods is required: %w", errdefs.ErrInvalidArgument)
	case cfg.Period < 0:
		return nil, fmt.Errorf("statussync: Config.Period %s: must not be negative: %w", cfg.Period, errdefs.ErrInvalidArgument)
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Syncer{cfg: cfg, written: map[types.UID]uint64{}}, nil
}

// Run syncs on every change of the statuses, and every Period while
// something is left to write, until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.cfg.Status.Changed():
		case <-retry:
		}
		retry = nil
		if s.SyncAll(ctx) {
			retry = time.After(s.cfg.Period)
		}
	}
}

// SyncAll writes every pod status that changed since its last write and
// completes the deletions of terminated pods; it reports whether something
// is left to do (a pod the informer has not delivered yet, a failed write).
func (s *Syncer) SyncAll(ctx context.Context) (pending bool) {
	seen := map[types.UID]bool{} // by the apiserver pod's UID
	for _, local := range s.cfg.Status.List() {
		remote, err := s.cfg.Pods.Pods(local.Namespace).Get(local.Name)
		if err != nil || (remote.UID != local.UID && !isMirrorOf(remote, &local)) {
			// Not seen yet, or a static pod without its mirror (yet).
			pending = true
			continue
		}
		seen[remote.UID] = true
		// The status and its version are read together: a status read by
		// List and a version read later could record a newer version than
		// the status written, and that newer status would never be written.
		latest, version, ok := s.cfg.Status.Get(local.UID)
		if w, written := s.written[remote.UID]; !ok || (written && w == version) {
			continue
		}
		if err := s.syncPod(ctx, remote, latest.Status); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				continue // gone or replaced: nothing to write
			}
			s.cfg.Logger.Warn("writing pod status failed; retrying", "pod", local.Namespace+"/"+local.Name, "err", err)
			pending = true
			continue
		}
		s.written[remote.UID] = version
	}
	for uid := range s.written {
		if !seen[uid] {
			delete(s.written, uid)
		}
	}
	return s.finishDeletions(ctx) || pending
}

// finishDeletions writes the last status of every pod deleted in the
// apiserver that the agent has terminated (its terminal phase, which a
// finalizer holding the pod keeps showing), then deletes it with grace 0
// and the precondition of its UID; it reports whether a write or a
// deletion failed (to be retried).
func (s *Syncer) finishDeletions(ctx context.Context) (failed bool) {
	for _, pod := range s.cfg.Status.Terminated() {
		uid := pod.UID
		remote, err := s.cfg.Pods.Pods(pod.Namespace).Get(pod.Name)
		if err != nil || remote.UID != uid {
			// Gone from the apiserver (the informer saw it go) or
			// replaced: nothing left to write or delete — the Node
			// authorizer would refuse a deletion of it anyway.
			s.cfg.Status.ForgetTerminated(uid)
			continue
		}
		if err := s.syncPod(ctx, remote, pod.Status); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			s.cfg.Logger.Warn("writing a stopped pod's status failed; retrying", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			failed = true
			continue
		}
		err = s.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			s.cfg.Logger.Warn("deleting a stopped pod failed; retrying", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			failed = true
			continue
		}
		s.cfg.Status.ForgetTerminated(uid)
	}
	return failed
}

// syncPod patches remote's status to st (merged with the conditions the
// agent does not own) unless it already is that.
func (s *Syncer) syncPod(ctx context.Context, remote *v1.Pod, st v1.PodStatus) error {
	merged := Merge(remote.Status, st)
	written := &v1.Pod{ObjectMeta: remote.ObjectMeta, Status: merged}
	if equality.Semantic.DeepEqual(remote.Status, merged) {
		s.cfg.Metrics.PodStatusWritten(written)
		return nil
	}
	patch, err := statusPatch(remote.UID, remote.Status, merged)
	if err != nil {
		return err
	}
	if _, err = s.cfg.Client.CoreV1().Pods(remote.Namespace).Patch(ctx, remote.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	s.cfg.Metrics.PodStatusWritten(written)
	return nil
}

// statusPatch is the strategic merge patch from status old to st, as the
// kubelet makes it: conditions are merged by type, so a condition someone
// else set since old was read (a readiness gate's) is left as it is; the
// pod's UID rides along as a precondition.
func statusPatch(uid types.UID, old, st v1.PodStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Pod{Status: old})
	if err != nil {
		return nil, err
	}
	newJSON, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: st})
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
}

// Merge returns the agent's status st with the conditions of old the agent
// neither owns nor publishes (an eviction's DisruptionTarget replaces the
// apiserver's) kept before its own, and the apiserver's nominatedNodeName and
// resource claim statuses kept (the strategic merge patch would otherwise
// remove them).
func Merge(old, st v1.PodStatus) v1.PodStatus {
	out := *st.DeepCopy()
	var conds []v1.PodCondition
	set := map[v1.PodConditionType]bool{} // what the agent publishes (an eviction's DisruptionTarget too)
	for _, c := range out.Conditions {
		set[c.Type] = true
	}
	for _, c := range old.Conditions {
		if !agentConditions[c.Type] && !set[c.Type] {
			conds = append(conds, c)
		}
	}
	conds = append(conds, out.Conditions...)
	out.Conditions = conds
	// What others own: the scheduler's nomination and resource claims.
	out.NominatedNodeName = old.NominatedNodeName
	out.ResourceClaimStatuses = old.ResourceClaimStatuses
	out.ExtendedResourceClaimStatus = old.ExtendedResourceClaimStatus
	out.NodeAllocatableResourceClaimStatuses = old.NodeAllocatableResourceClaimStatuses
	return out
}

// isMirrorOf reports whether remote is the mirror pod of the static pod
// local (its kubernetes.io/config.mirror annotation is local's config hash).
func isMirrorOf(remote, local *v1.Pod) bool {
	hash, ok := remote.Annotations[source.AnnotationMirror]
	return ok && hash != "" && hash == local.Annotations[source.AnnotationConfigHash]
}
