package podworker

import (
	"context"
	"sync"
)

// startGate bounds the pod starts in flight and grants them first come,
// first served: on this kind of machine the runtime slows down for every
// call when many sandboxes start at once, so a bounded, ordered stream lets
// the first pods finish early instead of every pod finishing late (GUIDE §2).
type startGate struct {
	mu      sync.Mutex
	free    int
	waiters []chan struct{}
}

func newStartGate(n int) *startGate { return &startGate{free: n} }

// acquire waits for a slot, in arrival order; false when ctx ended first.
func (g *startGate) acquire(ctx context.Context) bool {
	g.mu.Lock()
	if g.free > 0 && len(g.waiters) == 0 {
		g.free--
		g.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	g.waiters = append(g.waiters, ch)
	g.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, w := range g.waiters {
			if w == ch {
				g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
				return false
			}
		}
		// The slot was handed over as ctx ended: give it on.
		g.releaseLocked()
		return false
	}
}

// release returns a slot, handing it to the longest waiter.
func (g *startGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked()
}

func (g *startGate) releaseLocked() {
	if len(g.waiters) > 0 {
		ch := g.waiters[0]
		g.waiters = g.waiters[1:]
		close(ch)
		return
	}
	g.free++
}
