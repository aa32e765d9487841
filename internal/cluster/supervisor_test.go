package cluster

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

func TestSupervisorStopsInReverseOrderWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var r recorder
	s := newSupervisor(ctx)
	s.start("containerd", r.component("containerd"))
	s.onStop(func() error { r.add("remove pods"); return nil })
	s.start("server", r.component("server"))
	s.start("agent", r.component("agent"))
	cancel()
	if err := s.wait(); err != nil {
		t.Fatalf("wait after cancel = %v, want nil", err)
	}
	if err := s.stop(); err != nil {
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
	s := newSupervisor(context.Background())
	s.start("containerd", r.component("containerd"))
	fail := make(chan struct{})
	s.start("server", func(ctx context.Context) error { <-fail; return boom })
	s.start("agent", r.component("agent"))
	close(fail)
	done := make(chan error, 1)
	go func() { done <- s.wait() }()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("wait = %v, want the server's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return after a component failed")
	}
	if err := s.stop(); err != nil {
		t.Errorf("stop = %v, want nil (the failure was reported by wait)", err)
	}
	if want := []string{"stop agent", "stop containerd"}; !reflect.DeepEqual(r.events, want) {
		t.Errorf("stop order = %v, want %v", r.events, want)
	}
}

func TestSupervisorTreatsAnEarlyCleanExitAsAFailure(t *testing.T) {
	s := newSupervisor(context.Background())
	s.start("server", func(context.Context) error { return nil })
	if err := s.wait(); err == nil {
		t.Fatal("wait = nil after a component ended on its own")
	}
	_ = s.stop()
}
