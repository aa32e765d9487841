// Package nscleaner empties terminating namespaces and then finalizes them
// (the namespace deletion half of upstream's namespace controller): every
// namespaced resource in the namespace is deleted (pods on a node
// gracefully, completed by their agent), and once nothing is left the
// "kubernetes" finalizer is removed through namespaces/{name}/finalize,
// which deletes the namespace.
package nscleaner

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/workqueue"

	"berth/controlplane/resources"
	"berth/internal/errdefs"
)

// Config configures the cleaner.
type Config struct {
	// Resources are the served resources (namespaces among them).
	Resources *resources.Set
	// Workers clean that many namespaces at once; default 10
	// (kube-controller-manager's --concurrent-namespace-syncs).
	Workers int
	// RetryInterval is how long to wait before looking again at a namespace
	// that still has content; default 2s.
	RetryInterval time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultWorkers is Config.Workers' default.
const DefaultWorkers = 10

// Run cleans terminating namespaces until ctx ends: a watch on namespaces
// queues each terminating one, Workers clean them in parallel (one worker
// per namespace at a time), and a namespace with content left is queued
// again after RetryInterval (after a growing delay when cleaning failed).
func Run(ctx context.Context, cfg Config) error {
	if cfg.Resources == nil || cfg.Resources.Namespaces == nil {
		return fmt.Errorf("nscleaner: Resources with namespaces are required: %w", errdefs.ErrInvalidArgument)
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = 2 * time.Second
	}
	if cfg.Workers < 0 || cfg.RetryInterval < 0 {
		return fmt.Errorf("nscleaner: Workers %d and RetryInterval %s must not be negative: %w", cfg.Workers, cfg.RetryInterval, errdefs.ErrInvalidArgument)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &cleaner{cfg: cfg, queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	defer wg.Wait()
	defer c.queue.ShutDown()
	clusterCtx := genericapirequest.WithNamespace(ctx, "")
	for ctx.Err() == nil {
		w, err := cfg.Resources.Namespaces.Watch(clusterCtx, &metainternalversion.ListOptions{ResourceVersion: "0", Watch: true})
		if err != nil {
			cfg.Logger.Warn("namespace cleaner: watch", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(cfg.RetryInterval):
			}
			continue
		}
		c.enqueue(ctx, w)
		w.Stop()
	}
	return nil
}

type cleaner struct {
	cfg   Config
	queue workqueue.TypedRateLimitingInterface[string]
}

// enqueue queues every terminating namespace the watch reports, until the
// watch or ctx ends.
func (c *cleaner) enqueue(ctx context.Context, w watch.Interface) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			obj := ev.Object
			if c, ok := obj.(runtime.CacheableObject); ok {
				obj = c.GetObject()
			}
			ns, isNS := obj.(*corev1.Namespace)
			if isNS && ev.Type != watch.Deleted && ns.DeletionTimestamp != nil && slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
				c.queue.Add(ns.Name)
			}
		}
	}
}

// next cleans the next queued namespace; false once the queue shuts down.
func (c *cleaner) next(ctx context.Context) bool {
	name, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(name)
	done, err := c.clean(ctx, name)
	switch {
	case err != nil:
		c.cfg.Logger.Warn("namespace cleaner", "namespace", name, "err", err)
		c.queue.AddRateLimited(name)
	case !done:
		c.queue.Forget(name)
		c.queue.AddAfter(name, c.cfg.RetryInterval)
	default:
		c.queue.Forget(name)
	}
	return true
}

// clean deletes the namespace's content; once none is left it finalizes
// the namespace and reports done.
func (c *cleaner) clean(ctx context.Context, name string) (bool, error) {
	nsCtx := genericapirequest.WithNamespace(ctx, name)
	remaining := 0
	for _, res := range c.cfg.Resources.Resources {
		if !res.Namespaced || res.Verbs != nil {
			// Cluster-scoped, or not stored (localsubjectaccessreviews).
			continue
		}
		list, err := res.Store.List(nsCtx, &metainternalversion.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("listing %s: %w", res.Resource, err)
		}
		if meta.LenList(list) == 0 {
			continue
		}
		if _, err := res.Store.DeleteCollection(nsCtx, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}, &metainternalversion.ListOptions{}); err != nil {
			return false, fmt.Errorf("deleting %s: %w", res.Resource, err)
		}
		list, err = res.Store.List(nsCtx, &metainternalversion.ListOptions{})
		if err != nil {
			return false, fmt.Errorf("listing %s: %w", res.Resource, err)
		}
		remaining += meta.LenList(list)
	}
	if remaining > 0 {
		return false, nil
	}
	clusterCtx := genericapirequest.WithNamespace(ctx, "")
	obj, err := c.cfg.Resources.Namespaces.Get(clusterCtx, name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	ns := obj.(*corev1.Namespace).DeepCopy()
	ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	nsRes := c.cfg.Resources.ByGVR[corev1.SchemeGroupVersion.WithResource("namespaces")]
	fin, ok := nsRes.Subresources["finalize"].Storage.(rest.Updater)
	if !ok {
		return false, fmt.Errorf("namespaces/finalize is not served")
	}
	_, _, err = fin.Update(clusterCtx, name, rest.DefaultUpdatedObjectInfo(ns), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("finalizing: %w", err)
	}
	c.cfg.Logger.Info("namespace finalized", "namespace", name)
	return true, nil
}
