package podworker

import (
	"context"
	"runtime"
	"testing"
)

func TestStartGateIsBoundedAndFIFO(t *testing.T) {
	g := newStartGate(1)
	ctx := context.Background()
	if !g.acquire(ctx) {
		t.Fatal("first acquire failed")
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			g.acquire(ctx)
			order <- i
			g.release()
		}()
		waitQueued(g, i+1) // queue them in a known order
	}
	select {
	case <-order:
		t.Fatal("a waiter got a slot while none was free")
	default:
	}
	g.release()
	for want := range 3 {
		if got := <-order; got != want {
			t.Fatalf("slot %d went to waiter %d", want, got)
		}
	}
}

func TestStartGateCancelledWaiterLeavesQueue(t *testing.T) {
	g := newStartGate(1)
	g.acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- g.acquire(ctx) }()
	waitQueued(g, 1)
	cancel()
	if <-done {
		t.Fatal("a cancelled acquire reported success")
	}
	g.release()
	if !g.acquire(context.Background()) || g.free != 0 {
		t.Fatalf("slot lost after a cancelled waiter (free=%d)", g.free)
	}
}

func waitQueued(g *startGate, n int) {
	for {
		g.mu.Lock()
		queued := len(g.waiters)
		g.mu.Unlock()
		if queued == n {
			return
		}
		runtime.Gosched()
	}
}
