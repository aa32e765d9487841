package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// supervisor runs the agent's components: each under the same context,
// the first failure stopping the others, Wait returning it.
type supervisor struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

func newSupervisor(parent context.Context) *supervisor {
	ctx, cancel := context.WithCancel(parent)
	return &supervisor{ctx: ctx, cancel: cancel}
}

// Go runs fn; an error from it stops everything.
func (s *supervisor) Go(name string, fn func(context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := fn(s.ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.mu.Lock()
			if s.err == nil {
				s.err = fmt.Errorf("%s: %w", name, err)
			}
			s.mu.Unlock()
			s.cancel()
		}
	}()
}

// Stop ends every component and waits for them.
func (s *supervisor) Stop() {
	s.cancel()
	s.wg.Wait()
}

// Wait waits for every component to end (the context ended or one failed)
// and returns the first failure.
func (s *supervisor) Wait() error {
	<-s.ctx.Done()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
