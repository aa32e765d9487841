package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	fw "berth/controlplane/scheduler/framework"
)

// Event reasons, as kube-scheduler's.
const (
	ReasonScheduled        = "Scheduled"
	ReasonFailedScheduling = "FailedScheduling"
)

// scheduleOne runs one scheduling cycle for the next pod; false once the
// queue is closed.
func (s *Scheduler) scheduleOne(ctx context.Context) bool {
	qp := s.queue.Pop()
	if qp == nil {
		return false
	}
	pod := qp.Pod
	start := s.cfg.Clock.Now()
	if s.skip(pod) {
		s.queue.Done(pod)
		return true
	}
	assumed, err := s.cycle(ctx, pod)
	if err != nil {
		var fitErr *fw.FitError
		unschedulable := errors.As(err, &fitErr) || errors.Is(err, ErrNoNodesAvailable)
		result := resultError
		if unschedulable {
			result = resultUnschedulable
		}
		nominate := nomination{keep: true}
		if fitErr != nil {
			qp.UnschedulablePlugins = sets.New[string]()
			for p := range fitErr.Diagnosis.UnschedulablePlugins {
				qp.UnschedulablePlugins.Insert(p)
			}
			if pi, perr := fw.NewPodInfo(pod); perr == nil {
				node, msg := s.preempt(ctx, pi, fitErr)
				fitErr.Diagnosis.PostFilterMsg = msg
				nominate = nomination{node: node}
				s.nominator.set(pi, node)
			}
		}
		s.observe(result, start)
		s.log.Debug("pod unschedulable", "pod", podKey(pod), "err", err)
		s.recordFailure(ctx, pod, err, unschedulable, nominate)
		s.queue.AddUnschedulableIfNotPresent(qp, unschedulable)
		return true
	}
	s.queue.Done(pod)
	select {
	case s.bindSlots <- struct{}{}:
	case <-ctx.Done():
		s.cache.ForgetPod(assumed)
		return true
	}
	s.binds.Add(1)
	go func() {
		defer s.binds.Done()
		defer func() { <-s.bindSlots }()
		s.bind(ctx, qp, assumed, start)
	}()
	return true
}

// cycle is the scheduling cycle proper: refresh the snapshot, run the
// algorithm, assume the pod onto the chosen node.
func (s *Scheduler) cycle(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	pi, err := fw.NewPodInfo(pod)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", podKey(pod), err)
	}
	s.cache.UpdateSnapshot(s.snapshot)
	result, err := s.algorithm.Schedule(ctx, pi, s.snapshot)
	if err != nil {
		return nil, err
	}
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = result.SuggestedHost
	if err := s.cache.AssumePod(assumed); err != nil {
		return nil, err
	}
	s.nominator.remove(pod.UID)
	return assumed, nil
}

// observe counts an attempt and its duration.
func (s *Scheduler) observe(result string, start time.Time) {
	s.metrics.attempts.WithLabelValues(result, s.cfg.SchedulerName).Inc()
	s.metrics.attemptDuration.WithLabelValues(result, s.cfg.SchedulerName).Observe(s.cfg.Clock.Since(start).Seconds())
}

// bind posts the pod's Binding. On success it records the Scheduled event;
// on failure it forgets the assumed pod and requeues it with back-off
// (unless the pod is gone).
func (s *Scheduler) bind(ctx context.Context, qp *QueuedPodInfo, assumed *v1.Pod, start time.Time) {
	if err := s.preBind(ctx, assumed); err != nil {
		s.bindFailed(ctx, qp, assumed, start, err, false)
		return
	}
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: assumed.Namespace, Name: assumed.Name, UID: assumed.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: assumed.Spec.NodeName},
	}
	err := s.cfg.Client.CoreV1().Pods(assumed.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	if err == nil {
		s.observe(resultScheduled, start)
		s.recorder.Eventf(assumed, nil, v1.EventTypeNormal, ReasonScheduled, "Binding", "Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, assumed.Spec.NodeName)
		return
	}
	s.bindFailed(ctx, qp, assumed, start, err, apierrors.IsNotFound(err))
}

// preBind runs the profile's PreBind plugins in order; the first failure
// fails the binding.
func (s *Scheduler) preBind(ctx context.Context, assumed *v1.Pod) error {
	for _, p := range s.algorithm.Profile.PreBind {
		if st := p.PreBind(ctx, assumed, assumed.Spec.NodeName); !st.IsSuccess() {
			if err := st.AsError(); err != nil {
				return fmt.Errorf("running PreBind plugin %q: %w", p.Name(), err)
			}
			return fmt.Errorf("running PreBind plugin %q: %s", p.Name(), st.Message())
		}
	}
	return nil
}

// bindFailed forgets the assumed pod and requeues it with back-off (unless
// podGone).
func (s *Scheduler) bindFailed(ctx context.Context, qp *QueuedPodInfo, assumed *v1.Pod, start time.Time, err error, podGone bool) {
	s.cache.ForgetPod(assumed)
	s.queue.MoveAllToActiveOrBackoffQueue(nil)
	s.observe(resultError, start)
	if ctx.Err() != nil {
		return
	}
	s.log.Info("binding failed", "pod", podKey(assumed), "node", assumed.Spec.NodeName, "err", err)
	if podGone {
		s.queue.Done(qp.Pod)
		return
	}
	s.recordFailure(ctx, qp.Pod, fmt.Errorf("binding rejected: %w", err), false, nomination{keep: true})
	s.queue.AddUnschedulableIfNotPresent(qp, false)
}

// nomination is what a failure does to the pod's status.nominatedNodeName:
// keep it, or set it to node ("" clears it).
type nomination struct {
	keep bool
	node string
}

// recordFailure emits the FailedScheduling event and sets the pod's
// PodScheduled condition to False (reason Unschedulable or SchedulerError)
// with the same message, and its nominatedNodeName, when they differ from
// the current ones.
func (s *Scheduler) recordFailure(ctx context.Context, pod *v1.Pod, err error, unschedulable bool, nominate nomination) {
	msg := err.Error()
	reason := v1.PodReasonSchedulerError
	if unschedulable {
		reason = v1.PodReasonUnschedulable
	}
	s.recorder.Eventf(pod, nil, v1.EventTypeWarning, ReasonFailedScheduling, "Scheduling", "%s", msg)
	nominationChanged := !nominate.keep && nominate.node != pod.Status.NominatedNodeName
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == reason && c.Message == msg && !nominationChanged {
			return
		}
	}
	status := map[string]any{"conditions": []v1.PodCondition{{
		Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(s.cfg.Clock.Now()),
	}}}
	if nominationChanged {
		status["nominatedNodeName"] = nominate.node
		if nominate.node == "" {
			status["nominatedNodeName"] = nil
		}
	}
	patch, jerr := json.Marshal(map[string]any{"status": status})
	if jerr != nil {
		return
	}
	s.binds.Add(1)
	go func() {
		defer s.binds.Done()
		_, perr := s.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if perr != nil && ctx.Err() == nil && !apierrors.IsNotFound(perr) {
			s.log.Info("updating pod condition failed", "pod", podKey(pod), "err", perr)
		}
	}()
}
