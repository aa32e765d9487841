// Package controller holds what every berth controller shares: the Config
// each controller's constructor validates, the work-queue loop that runs a
// controller's sync function over keys with rate-limited retries (Loop),
// the Queue a controller registers its informers' handlers with, and the
// owner lookups of controllers whose objects own others (Owners,
// Dependents).
//
// The controllers themselves live in subpackages; each exposes a
// constructor taking its Config and Run(ctx) error, and manager starts a
// set of them under leader election.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"berth/internal/errdefs"
)

// Config is the part of every controller's configuration that is the same
// for all of them.
type Config struct {
	// Client talks to the apiserver; required.
	Client kubernetes.Interface
	// Informers is the shared informer factory the controller registers its
	// informers with; required. The caller starts it after constructing
	// every controller (controller.Run waits for the caches to sync).
	Informers informers.SharedInformerFactory
	// Recorder emits Events; nil records nothing.
	Recorder record.EventRecorder
	// Logger; nil discards.
	Logger *slog.Logger
	// Clock is the source of time (injected for tests); nil is the real clock.
	Clock clock.WithTicker
	// Workers is how many keys are synced in parallel; 0 means the
	// controller's default.
	Workers int
}

// Validate checks the shared fields and fills defaults; name prefixes errors.
func (c *Config) Validate(name string, defaultWorkers int) error {
	if c.Client == nil {
		return fmt.Errorf("%s controller config: Client is required: %w", name, errdefs.ErrInvalidArgument)
	}
	if c.Informers == nil {
		return fmt.Errorf("%s controller config: Informers is required: %w", name, errdefs.ErrInvalidArgument)
	}
	if c.Workers < 0 {
		return fmt.Errorf("%s controller config: Workers %d is negative: %w", name, c.Workers, errdefs.ErrInvalidArgument)
	}
	if c.Workers == 0 {
		c.Workers = defaultWorkers
	}
	if c.Recorder == nil {
		c.Recorder = &record.FakeRecorder{} // nil channel: drops every event
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	c.Logger = c.Logger.With("controller", name)
	return nil
}

// RateLimited returns a rate-limited work queue of keys of type K
// (upstream's default controller rate limiter: per-item exponential
// back-off 5ms..1000s combined with an overall 10 qps/100 burst bucket).
// Queues are unnamed: a named queue updates its workqueue metrics twice a
// second, and berth serves none of them (an idle cluster's wake-ups).
func RateLimited[K comparable](clk clock.WithTicker) workqueue.TypedRateLimitingInterface[K] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[K](),
		workqueue.TypedRateLimitingQueueConfig[K]{Clock: clk},
	)
}

// KeyFunc returns an object's namespace/name key (tombstones included).
func KeyFunc(obj any) (string, bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return key, err == nil
}

// Loop runs sync for the queue's keys with the given number of workers
// until ctx ends: it first waits for the informers to sync. A sync error
// requeues the key with back-off; a key that syncs cleanly is forgotten,
// and so is one whose sync failed because its namespace is terminating
// (the apiserver refuses new objects there until the namespace is gone,
// so retrying only spins; upstream's controllers drop such keys too).
func Loop[K comparable](ctx context.Context, cfg *Config, queue workqueue.TypedRateLimitingInterface[K], synced []cache.InformerSynced, syncFn func(ctx context.Context, key K) error) error {
	defer queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("informer caches did not sync: %w", errdefs.ErrUnavailable)
	}
	cfg.Logger.Debug("controller started", "workers", cfg.Workers)
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext(ctx, cfg.Logger, queue, syncFn) {
			}
		}()
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	return nil
}

func processNext[K comparable](ctx context.Context, log *slog.Logger, queue workqueue.TypedRateLimitingInterface[K], syncFn func(context.Context, K) error) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	start := time.Now()
	err := syncFn(ctx, key)
	if err == nil {
		queue.Forget(key)
		log.Debug("synced", "key", key, "took", time.Since(start))
		return true
	}
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		queue.Forget(key)
		log.Debug("namespace terminating; not retried", "key", key, "err", err)
		return true
	}
	if ctx.Err() != nil {
		return true
	}
	log.Info("sync failed; requeued", "key", key, "err", err)
	queue.AddRateLimited(key)
	return true
}
