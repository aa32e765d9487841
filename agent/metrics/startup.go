package metrics

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// startupTracker measures pod startup as the Kubernetes pod startup latency
// SLI defines it, as the kubelet's pod startup latency tracker: from the
// pod's creationTimestamp to when the agent, watching the apiserver,
// observes the pod with every container started — minus the time its
// images were being pulled (first pull started → last pull finished). Only
// pods the agent sees before it acknowledged them (no status.startTime) are
// measured, each once.
type startupTracker struct {
	clock clock.PassiveClock

	mu   sync.Mutex
	pods map[types.UID]*podStartup
}

type podStartup struct {
	firstStartedPulling time.Time
	lastFinishedPulling time.Time
	// runningWritten is when a status with every container started was
	// written to the apiserver.
	runningWritten time.Time
	recorded       bool
}

func newStartupTracker(clk clock.PassiveClock) *startupTracker {
	return &startupTracker{clock: clk, pods: map[types.UID]*podStartup{}}
}

// observed handles the pod as a watch delivered it at when; it returns the
// durations to record (ok false: nothing to record).
func (t *startupTracker) observed(pod *v1.Pod, when time.Time) (sli, total time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		delete(t.pods, pod.UID)
		return 0, 0, false
	}
	st := t.pods[pod.UID]
	if st == nil {
		if pod.Status.StartTime.IsZero() {
			t.pods[pod.UID] = &podStartup{}
		}
		return 0, 0, false
	}
	if st.recorded || st.runningWritten.IsZero() || !allContainersStarted(pod) {
		return 0, 0, false
	}
	st.recorded = true
	total = when.Sub(pod.CreationTimestamp.Time)
	return total - st.lastFinishedPulling.Sub(st.firstStartedPulling), total, true
}

func (t *startupTracker) pullStarted(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.pods[uid]; st != nil && (st.firstStartedPulling.IsZero() || at.Before(st.firstStartedPulling)) {
		st.firstStartedPulling = at
	}
}

func (t *startupTracker) pullFinished(uid types.UID, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.pods[uid]; st != nil && at.After(st.lastFinishedPulling) {
		st.lastFinishedPulling = at
	}
}

func (t *startupTracker) statusWritten(pod *v1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.pods[pod.UID]; st != nil && !st.recorded && st.runningWritten.IsZero() && allContainersStarted(pod) {
		st.runningWritten = t.clock.Now()
	}
}

func (t *startupTracker) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pods, uid)
}

// allContainersStarted reports a pod whose every app container runs (the
// SLI's "all containers reported as started").
func allContainersStarted(pod *v1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() {
			return false
		}
	}
	return true
}

// PodObservedOnWatch hands the tracker a pod as the apiserver watch
// delivered it at when. A pod not yet acknowledged (no status.startTime)
// starts being tracked; a tracked pod whose status, written by the agent,
// shows every container started is measured once:
// kubelet_pod_start_sli_duration_seconds (creationTimestamp → observed,
// minus image pulling) and kubelet_pod_start_total_duration_seconds
// (including it). A finished pod is forgotten.
func (m *Metrics) PodObservedOnWatch(pod *v1.Pod, when time.Time) {
	if m == nil || pod == nil {
		return
	}
	if sli, total, ok := m.startup.observed(pod, when); ok {
		m.podStartSLIDuration.Observe(sli.Seconds())
		m.podStartTotalDuration.Observe(total.Seconds())
	}
}

// ImagePullStarted marks an image pull for the pod beginning at at (the
// earliest counts).
func (m *Metrics) ImagePullStarted(uid types.UID, at time.Time) {
	if m != nil {
		m.startup.pullStarted(uid, at)
	}
}

// ImagePullFinished marks an image pull for the pod completing at at (the
// latest counts); a failed pull does not finish.
func (m *Metrics) ImagePullFinished(uid types.UID, at time.Time) {
	if m != nil {
		m.startup.pullFinished(uid, at)
	}
}

// PodStatusWritten tells the tracker the pod's status (pod.Status) was
// written to the apiserver.
func (m *Metrics) PodStatusWritten(pod *v1.Pod) {
	if m != nil && pod != nil {
		m.startup.statusWritten(pod)
	}
}

// ForgetPodStartup drops what the tracker holds for a removed pod.
func (m *Metrics) ForgetPodStartup(uid types.UID) {
	if m != nil {
		m.startup.forget(uid)
	}
}
