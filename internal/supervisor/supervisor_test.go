package supervisor

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"
)

// recorder notes the order components stop in.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

func (r *recorder) component(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		<-ctx.Done()
		r.add("stop " + name)
		return nil
	}
}

func reverse(ctx context.Context) *Supervisor {
	return New(ctx, Config{Order: Reverse, MustRun: true})
}

func TestSupervisorStopsInReverseOrderWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var r recorder
	s := reverse(ctx)
	s.Go("containerd", r.component("containerd"))
	s.OnStop(func() error { r.add("remove pods"); return nil })
	s.Go("server", r.component("server"))
	s.Go("agent", r.component("agent"))
	cancel()
	if err := s.Wait(); err != nil {
		t.Fatalf("wait after cancel = %v, want nil", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("stop = %v", err)
	}
	want := []string{"stop agent", "stop server", "remove pods", "stop containerd"}
	if !reflect.DeepEqual(r.events, want) {
		t.Errorf("stop order = %v, want %v", r.events, want)
	}
}

func TestSupervisorReportsTheFirstFailureOnce(t *testing.T) {
	var r recorder
	boom := errors.New("boom")
	s := reverse(context.Background())
	s.Go("containerd", r.component("containerd"))
	fail := make(chan struct{})
	s.Go("server", func(ctx context.Context) error { <-fail; return boom })
	s.Go("agent", r.component("agent"))
	close(fail)
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("wait = %v, want the server's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return after a component failed")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("stop = %v, want nil (the failure was reported by wait)", err)
	}
	if want := []string{"stop agent", "stop containerd"}; !reflect.DeepEqual(r.events, want) {
		t.Errorf("stop order = %v, want %v", r.events, want)
	}
}

func TestSupervisorTreatsAnEarlyCleanExitAsAFailure(t *testing.T) {
	s := reverse(context.Background())
	s.Go("server", func(context.Context) error { return nil })
	if err := s.Wait(); err == nil {
		t.Fatal("wait = nil after a component ended on its own")
	}
	_ = s.Stop()
}

func TestSupervisorStopsAllOnFirstFailure(t *testing.T) {
	boom := errors.New("boom")
	stopped := make(chan struct{})
	sup := New(context.Background(), Config{StopTimeout: 10 * time.Second})
	waits := sup.Go("waits", func(ctx context.Context) error { <-ctx.Done(); close(stopped); return nil })
	sup.Go("fails", func(context.Context) error { return boom })
	select {
	case <-sup.Failed():
		if err := sup.Err(); !errors.Is(err, boom) {
			t.Fatalf("failure %v, want boom", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("failure not reported")
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the other component was not stopped")
	}
	sup.Stop()
	select {
	case <-waits:
	default:
		t.Fatal("stop returned before the components ended")
	}
}

// With Order Together, the parent's end cancels every component at once: a
// component started first does not wait for the later ones to stop.
func TestSupervisorTogetherCancelsEveryComponentWhenTheParentEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := New(ctx, Config{})
	first := s.Go("first", func(ctx context.Context) error { <-ctx.Done(); return nil })
	release := make(chan struct{})
	s.Go("second", func(ctx context.Context) error { <-ctx.Done(); <-release; return nil })
	cancel()
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the first component did not see the parent's end")
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("wait = %v, want nil", err)
	}
	close(release)
	if err := s.Stop(); err != nil {
		t.Fatalf("stop = %v", err)
	}
}

// Errors while stopping are Stop's, a component ending with nil is not a
// failure unless MustRun, and context.Canceled from a stopped component is
// no error.
func TestSupervisorStopReturnsErrorsWhileStopping(t *testing.T) {
	shutdown := errors.New("shutdown failed")
	s := New(context.Background(), Config{})
	s.Go("returns", func(context.Context) error { return nil })
	s.Go("canceled", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	s.Go("bad shutdown", func(ctx context.Context) error { <-ctx.Done(); return shutdown })
	s.OnStop(func() error { return nil })
	err := s.Stop()
	if !errors.Is(err, shutdown) || errors.Is(err, context.Canceled) {
		t.Fatalf("stop = %v, want only the shutdown error", err)
	}
	if s.Err() != nil {
		t.Fatalf("err = %v, want no failure", s.Err())
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second stop = %v, want nil", err)
	}
}

// A component started from another while Stop runs is stopped too.
func TestSupervisorStopsComponentsStartedByComponents(t *testing.T) {
	s := New(context.Background(), Config{Order: Reverse})
	started := make(chan (<-chan struct{}), 1)
	s.Go("parent", func(ctx context.Context) error {
		started <- s.Go("child", func(ctx context.Context) error { <-ctx.Done(); return nil })
		<-ctx.Done()
		return nil
	})
	child := <-started
	if err := s.Stop(); err != nil {
		t.Fatalf("stop = %v", err)
	}
	select {
	case <-child:
	default:
		t.Fatal("stop returned before the child component ended")
	}
}

func TestSupervisorStopGivesUpAfterStopTimeout(t *testing.T) {
	s := New(context.Background(), Config{StopTimeout: 50 * time.Millisecond})
	hang := make(chan struct{})
	defer close(hang)
	ran := false
	s.OnStop(func() error { ran = true; return nil }) // after the component, in the unwinding
	s.Go("hangs", func(context.Context) error { <-hang; return nil })
	done := make(chan struct{})
	go func() { s.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("stop waited past its timeout")
	}
	if !ran {
		t.Fatal("the stop hook did not run")
	}
}
