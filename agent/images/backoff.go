package images

import (
	"sync"
	"time"
)

// backOff is a per-key exponential back-off with the semantics of the
// kubelet's image back-off: a failure starts (or doubles, up to max) the
// key's delay from the failure's time; a key whose last failure is more than
// 2×max ago starts again from the initial delay, and is forgotten by gc.
type backOff struct {
	initial, max time.Duration

	mu      sync.Mutex
	entries map[string]backOffEntry
}

type backOffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

func newBackOff(initial, max time.Duration) *backOff {
	return &backOff{initial: initial, max: max, entries: map[string]backOffEntry{}}
}

// inBackOff reports whether key's delay since its last failure still runs at
// now, and how long remains.
func (b *backOff) inBackOff(key string, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return false, 0
	}
	if elapsed := now.Sub(e.lastUpdate); elapsed < e.delay {
		return true, e.delay - elapsed
	}
	return false, 0
}

// next records a failure of key at now and returns the new delay.
func (b *backOff) next(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	switch {
	case !ok || now.Sub(e.lastUpdate) > 2*b.max:
		e.delay = b.initial
	default:
		e.delay = min(2*e.delay, b.max)
	}
	e.lastUpdate = now
	b.entries[key] = e
	return e.delay
}

// gc forgets keys whose last failure is more than 2×max before now.
func (b *backOff) gc(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, e := range b.entries {
		if now.Sub(e.lastUpdate) > 2*b.max {
			delete(b.entries, k)
		}
	}
}
