package testrun

import (
	"context"
	"errors"
	"testing"
)

type runner struct {
	started chan struct{}
	ended   chan struct{}
	err     error
}

func (r *runner) Run(ctx context.Context) error {
	close(r.started)
	<-ctx.Done()
	close(r.ended)
	return r.err
}

// Start runs the component at once and ends it, waiting, when the test
// ends.
func TestStartRunsUntilTheTestEnds(t *testing.T) {
	r := &runner{started: make(chan struct{}), ended: make(chan struct{})}
	t.Run("inner", func(t *testing.T) {
		Start(t, r)
		<-r.started
		select {
		case <-r.ended:
			t.Fatal("Run ended before the test")
		default:
		}
	})
	select {
	case <-r.ended:
	default:
		t.Fatal("Run still running after the test ended")
	}
}

// An error from Run fails the test.
func TestStartReportsRunError(t *testing.T) {
	r := &runner{started: make(chan struct{}), ended: make(chan struct{}), err: errors.New("boom")}
	rec := &recorder{TB: t}
	Start(rec, r)
	<-r.started
	rec.runCleanups()
	if !rec.failed {
		t.Fatal("a Run error did not fail the test")
	}
}

// recorder is a testing.TB whose cleanups run on demand and whose Errorf
// is recorded.
type recorder struct {
	testing.TB
	cleanups []func()
	failed   bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Cleanup(f func())      { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(string, ...any) { r.failed = true }

func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}
