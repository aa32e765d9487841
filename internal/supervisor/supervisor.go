// Package supervisor runs a binary's long-running components, each a named
// Run(ctx) error, under one lifecycle: started in order, the first to fail
// reported, all stopped on the way out — together, or one at a time in
// reverse start order with stop hooks at their place in between. The agent,
// `berth server` and `berth up` each run their components under one.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"berth/internal/errdefs"
)

// Order is how the components are stopped.
type Order int

const (
	// Together cancels every component at once, as soon as the parent
	// context ends, one fails or Stop is called; Stop waits for them all.
	Together Order = iota
	// Reverse leaves the components running until Stop, which cancels
	// them one at a time in reverse start order, waiting for each before
	// the one started before it: a component may rely on those started
	// earlier until it has stopped.
	Reverse
)

// Config configures a Supervisor; the zero value is valid.
type Config struct {
	// Order is how Stop ends the components (default Together).
	Order Order
	// MustRun makes a component returning nil before it is stopped a
	// failure too, for components meant to run until stopped.
	MustRun bool
	// StopTimeout bounds how long Stop waits for the components; 0 waits
	// for all of them.
	StopTimeout time.Duration
	// Logger logs failures and a Stop that timed out; nil discards.
	Logger *slog.Logger
}

// Supervisor runs components; its methods are safe for concurrent use, Go
// included from within a component.
type Supervisor struct {
	cfg Config
	// run ends with parent, at the first failure and at Stop (see
	// Context); base is what the components' contexts derive from: run for
	// Together, parent's values without its cancellation for Reverse.
	run       context.Context
	cancelRun context.CancelFunc
	base      context.Context
	failed    chan struct{} // closed at the first failure
	stopMu    sync.Mutex    // one Stop at a time

	mu       sync.Mutex
	stack    []*entry
	first    *entry // the component whose failure closed failed
	stopping bool
}

// entry is a started component or a stop hook.
type entry struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done closes
	hook   func() error
}

// New returns a supervisor whose run ends with parent.
func New(parent context.Context, cfg Config) *Supervisor {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Supervisor{cfg: cfg, failed: make(chan struct{})}
	s.run, s.cancelRun = context.WithCancel(parent)
	s.base = s.run
	if cfg.Order == Reverse {
		s.base = context.WithoutCancel(parent)
	}
	return s
}

// Go runs fn in its own goroutine under a context of its own; the returned
// channel closes once fn has returned. fn returning an error before it was
// stopped (or nil, with Config.MustRun) is a failure: the first one is what
// Wait and Err report, and with Order Together it stops every component.
func (s *Supervisor) Go(name string, fn func(context.Context) error) <-chan struct{} {
	ctx, cancel := context.WithCancel(s.base)
	e := &entry{name: name, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	s.stack = append(s.stack, e)
	if s.stopping {
		cancel()
	}
	s.mu.Unlock()
	go func() {
		err := fn(ctx)
		stopped := ctx.Err() != nil
		switch {
		case err == nil && !stopped && s.cfg.MustRun:
			err = fmt.Errorf("%s: stopped on its own: %w", name, errdefs.ErrUnavailable)
		case err != nil && !(stopped && errors.Is(err, context.Canceled)):
			err = fmt.Errorf("%s: %w", name, err)
		default:
			err = nil
		}
		e.err = err
		if err != nil && !stopped {
			s.fail(e)
		}
		close(e.done)
	}()
	return e.done
}

// fail records e as the first failure, if it is.
func (s *Supervisor) fail(e *entry) {
	s.mu.Lock()
	first := s.first == nil
	if first {
		s.first = e
	}
	s.mu.Unlock()
	if !first {
		return
	}
	s.cfg.Logger.Error("component failed; stopping", "component", e.name, "err", e.err)
	close(s.failed)
	s.cancelRun()
}

// OnStop pushes hook; Stop runs it when it unwinds to this place (with Order
// Reverse, once every component started after it has stopped).
func (s *Supervisor) OnStop(hook func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stack = append(s.stack, &entry{hook: hook})
}

// Context ends when the parent ends, at the first failure and at Stop (with
// Order Reverse, once Stop has stopped every component): for work done on
// the components' behalf outside them.
func (s *Supervisor) Context() context.Context { return s.run }

// Failed is closed at the first failure.
func (s *Supervisor) Failed() <-chan struct{} { return s.failed }

// Err is the first failure ("name: error"), nil while there is none.
func (s *Supervisor) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first == nil {
		return nil
	}
	return s.first.err
}

// Wait blocks until the parent context ends (nil) or a component fails (its
// error). It stops nothing: Stop does.
func (s *Supervisor) Wait() error {
	<-s.run.Done()
	return s.Err()
}

// Stop stops every component (see Order) and runs the stop hooks, then
// returns what went wrong while stopping: the components' errors other than
// the failure Err reports, the hooks' errors. A second Stop returns nil.
func (s *Supervisor) Stop() error {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	if s.cfg.Order == Together {
		s.cancelRun()
	} else {
		defer s.cancelRun()
	}
	var deadline <-chan time.Time
	if s.cfg.StopTimeout > 0 {
		t := time.NewTimer(s.cfg.StopTimeout)
		defer t.Stop()
		deadline = t.C
	}
	var errs []error
	timedOut := false
	for {
		e, first := s.pop()
		if e == nil {
			return errors.Join(errs...)
		}
		if e.hook != nil {
			errs = append(errs, e.hook())
			continue
		}
		e.cancel()
		if timedOut {
			continue
		}
		select {
		case <-e.done:
		case <-deadline:
			timedOut = true
			s.cfg.Logger.Warn("components did not stop in time", "timeout", s.cfg.StopTimeout, "waiting for", e.name)
			continue
		}
		if e != first {
			errs = append(errs, e.err)
		}
	}
}

// pop takes the top of the stack (nil when empty) and the first failure.
func (s *Supervisor) pop() (*entry, *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.stack) == 0 {
		return nil, s.first
	}
	e := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	return e, s.first
}
