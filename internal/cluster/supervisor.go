package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"berth/internal/errdefs"
)

// supervisor runs components, each under its own context (keeping the
// parent's values, not its cancellation), as a stack:
// stop unwinds it in reverse start order, cancelling each component and
// waiting for it before the one started before it. Stop hooks pushed
// between components run at their place in the unwinding.
type supervisor struct {
	parent context.Context
	failed chan struct{} // closed at the first component ending on its own
	once   sync.Once

	mu    sync.Mutex
	stack []*entry
	first *entry // the component whose end closed failed
}

type entry struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	hook   func() error
}

func newSupervisor(parent context.Context) *supervisor {
	return &supervisor{parent: parent, failed: make(chan struct{})}
}

// start runs fn in its own goroutine under a child context; the returned
// channel closes when fn has returned. fn returning before stop is a failure
// of the cluster.
func (s *supervisor) start(name string, fn func(context.Context) error) <-chan struct{} {
	// Not a child of parent's cancellation: when parent ends, stop
	// cancels the components one by one, in reverse order.
	ctx, cancel := context.WithCancel(context.WithoutCancel(s.parent))
	e := &entry{name: name, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	s.stack = append(s.stack, e)
	s.mu.Unlock()
	go func() {
		err := fn(ctx)
		if err == nil && ctx.Err() == nil {
			err = fmt.Errorf("stopped on its own: %w", errdefs.ErrUnavailable)
		}
		if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
			e.err = fmt.Errorf("%s: %w", name, err)
		}
		close(e.done)
		if ctx.Err() == nil {
			s.once.Do(func() {
				s.mu.Lock()
				s.first = e
				s.mu.Unlock()
				close(s.failed)
			})
		}
	}()
	return e.done
}

// onStop pushes a hook that runs when stop unwinds to it.
func (s *supervisor) onStop(hook func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stack = append(s.stack, &entry{hook: hook})
}

// wait blocks until the parent context ends (nil) or a component ends on
// its own (its error).
func (s *supervisor) wait() error {
	select {
	case <-s.parent.Done():
		return nil
	case <-s.failed:
		return s.firstErr("a component stopped")
	}
}

// firstErr is the error of the component that ended first, or msg.
func (s *supervisor) firstErr(msg string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first != nil && s.first.err != nil {
		return s.first.err
	}
	return fmt.Errorf("cluster: %s: %w", msg, errdefs.ErrUnavailable)
}

// stop unwinds the stack and returns what went wrong while stopping (the
// failure wait reported is not repeated).
func (s *supervisor) stop() error {
	s.mu.Lock()
	stack := append([]*entry(nil), s.stack...)
	first := s.first
	s.mu.Unlock()
	var errs []error
	for i := len(stack) - 1; i >= 0; i-- {
		e := stack[i]
		if e.hook != nil {
			errs = append(errs, e.hook())
			continue
		}
		e.cancel()
		<-e.done
		if e != first {
			errs = append(errs, e.err)
		}
	}
	return errors.Join(errs...)
}
