// Package testrun runs a component with berth's lifecycle contract,
// Run(ctx) error, for the length of a test.
package testrun

import (
	"context"
	"testing"
)

// Runner is a long-running component: Run blocks until ctx ends.
type Runner interface {
	Run(ctx context.Context) error
}

// Start runs r in a goroutine until the test ends; then it cancels r's
// context, waits for Run to return and fails the test if it returned an
// error.
func Start(tb testing.TB, r Runner) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Run: %v", err)
		}
	})
}
