package endpointslice

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TriggerTimes computes the endpoints.kubernetes.io/last-change-trigger-time
// of a Service's slices, as upstream's trigger time tracker: the earliest
// change not yet reflected: the Service's creation on its first sync, else
// the earliest Ready-condition transition of a pod that changed since the
// last sync (zero when none did). Safe for concurrent use.
type TriggerTimes struct {
	mu    sync.Mutex
	state map[string]triggerState
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time
}

// NewTriggerTimes is an empty tracker.
func NewTriggerTimes() *TriggerTimes { return &TriggerTimes{state: map[string]triggerState{}} }

// Compute returns the trigger time for svc (key namespace/name) with its
// selected pods, and commit, which remembers them for the next sync (to
// call once what the time was computed for is written: a failed write
// computes the same time again).
func (t *TriggerTimes) Compute(key string, svc *corev1.Service, pods []*corev1.Pod) (trigger time.Time, commit func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, known := t.state[key]
	var earliest time.Time
	earlier := func(x time.Time) {
		if earliest.IsZero() || x.Before(earliest) {
			earliest = x
		}
	}
	next := triggerState{service: svc.CreationTimestamp.Time, pods: make(map[string]time.Time, len(pods))}
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type != corev1.PodReady || c.LastTransitionTime.IsZero() {
				continue
			}
			next.pods[p.Name] = c.LastTransitionTime.Time
			if c.LastTransitionTime.After(prev.pods[p.Name]) {
				earlier(c.LastTransitionTime.Time)
			}
		}
	}
	if next.service.After(prev.service) {
		earlier(next.service)
	}
	commit = func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.state[key] = next
	}
	if !known {
		return svc.CreationTimestamp.Time, commit
	}
	return earliest, commit
}

// Forget drops a deleted Service's state.
func (t *TriggerTimes) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.state, key)
}
