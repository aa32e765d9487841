// Package backoff is the agent's per-container restart back-off
// (CrashLoopBackOff), with the kubelet's numbers and rules: the first restart
// after an exit is immediate, each further one waits twice as long as the one
// before (10 s, 20 s, 40 s, … up to 5 min), and a container that ran for longer
// than the reset window (10 min) before exiting starts again from the beginning.
//
// The tracker is plain state: every method takes the time it reasons about,
// so callers inject their clock and tests need none.
package backoff

import (
	"fmt"
	"sync"
	"time"

	"berth/internal/errdefs"
)

// Upstream's defaults for container restarts.
const (
	DefaultInitial    = 10 * time.Second
	DefaultMax        = 5 * time.Minute
	DefaultResetAfter = 10 * time.Minute
)

// Policy is the shape of the back-off curve.
type Policy struct {
	// Initial is the wait before the second restart (the first is immediate).
	Initial time.Duration
	// Max caps the doubling.
	Max time.Duration
	// ResetAfter forgets the history of a container whose exit came this
	// long after the previous recorded exit (it ran successfully meanwhile).
	ResetAfter time.Duration
}

// DefaultPolicy is the kubelet's container back-off.
func DefaultPolicy() Policy {
	return Policy{Initial: DefaultInitial, Max: DefaultMax, ResetAfter: DefaultResetAfter}
}

// Validate reports a policy that cannot work, naming the field.
func (p Policy) Validate() error {
	switch {
	case p.Initial <= 0:
		return fmt.Errorf("backoff: Initial must be positive, got %s: %w", p.Initial, errdefs.ErrInvalidArgument)
	case p.Max < p.Initial:
		return fmt.Errorf("backoff: Max (%s) must not be below Initial (%s): %w", p.Max, p.Initial, errdefs.ErrInvalidArgument)
	case p.ResetAfter <= 0:
		return fmt.Errorf("backoff: ResetAfter must be positive, got %s: %w", p.ResetAfter, errdefs.ErrInvalidArgument)
	}
	return nil
}

type entry struct {
	delay      time.Duration
	lastUpdate time.Time
}

// Tracker holds the back-off of many keys (one per pod container). It is safe
// for concurrent use.
type Tracker struct {
	policy Policy
	mu     sync.Mutex
	items  map[string]entry
}

// New returns an empty tracker. The policy must be valid (see Policy.Validate).
func New(p Policy) *Tracker {
	return &Tracker{policy: p, items: make(map[string]entry)}
}

// Key is the stable identity of a container for back-off: the pod's UID, the
// container's name and the hash of its spec, so a changed spec starts afresh
// as it does upstream.
func Key(podUID, container string, specHash uint64) string {
	return fmt.Sprintf("%s/%s/%x", podUID, container, specHash)
}

// InBackOff reports whether a container that last exited at finishedAt must
// still wait at now, and for how long in all (the current delay). It only
// reads the state.
func (t *Tracker) InBackOff(key string, finishedAt, now time.Time) (delay time.Duration, waiting bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.items[key]
	if !ok || t.expired(e, finishedAt) {
		return 0, false
	}
	return e.delay, now.Sub(finishedAt) < e.delay
}

// Until returns the time at which the restart of a container that exited at
// finishedAt is allowed, and false when it is allowed at once.
func (t *Tracker) Until(key string, finishedAt time.Time) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.items[key]
	if !ok || t.expired(e, finishedAt) {
		return time.Time{}, false
	}
	return finishedAt.Add(e.delay), true
}

// Next records that the container that exited at finishedAt is being
// restarted now, and so lengthens the wait before the restart after its next
// exit: Initial the first time, then doubling up to Max, and Initial again
// when the exit came more than ResetAfter after the previous one.
func (t *Tracker) Next(key string, finishedAt time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.items[key]
	if !ok || t.expired(e, finishedAt) {
		e = entry{delay: t.policy.Initial}
	} else {
		e.delay = min(2*e.delay, t.policy.Max)
	}
	e.lastUpdate = finishedAt
	t.items[key] = e
	return e.delay
}

// Forget drops a key (the pod is gone).
func (t *Tracker) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.items, key)
}

// GC drops the keys whose history has expired at now, bounding the memory of
// a tracker that outlives many pods.
func (t *Tracker) GC(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.items {
		if t.expired(e, now) {
			delete(t.items, k)
		}
	}
}

// Len is the number of keys held.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.items)
}

func (t *Tracker) expired(e entry, eventTime time.Time) bool {
	return eventTime.Sub(e.lastUpdate) > t.policy.ResetAfter
}
