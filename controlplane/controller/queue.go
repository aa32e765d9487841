package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Queue is a controller's rate-limited queue of namespace/name keys
// together with the informers its syncs read: Watch registers an event
// handler and remembers the informer, Run waits for every remembered cache
// and runs the sync function over the keys (Loop).
type Queue struct {
	workqueue.TypedRateLimitingInterface[string]
	name   string
	cfg    Config
	synced []cache.InformerSynced
}

// NewQueue returns the queue of the controller called name, configured by
// cfg (validated: its Logger, Workers and Clock are used).
func NewQueue(name string, cfg *Config) *Queue {
	return &Queue{TypedRateLimitingInterface: RateLimited[string](cfg.Clock), name: name, cfg: *cfg}
}

// Watch registers h (none when nil) with inf, whose cache Run then waits for.
func (q *Queue) Watch(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
	if h != nil {
		if _, err := inf.AddEventHandler(h); err != nil {
			return fmt.Errorf("%s controller: %w", q.name, err)
		}
	}
	q.synced = append(q.synced, inf.HasSynced)
	return nil
}

// Enqueue adds obj's namespace/name key (tombstones included).
func (q *Queue) Enqueue(obj any) {
	if key, ok := KeyFunc(obj); ok {
		q.Add(key)
	}
}

// EnqueueAfter adds obj's key after d.
func (q *Queue) EnqueueAfter(obj any, d time.Duration) {
	if key, ok := KeyFunc(obj); ok {
		q.AddAfter(key, d)
	}
}

// Run runs sync over the keys until ctx ends (see Loop).
func (q *Queue) Run(ctx context.Context, sync func(ctx context.Context, key string) error) error {
	return Loop(ctx, &q.cfg, q.TypedRateLimitingInterface, q.synced, sync)
}

// Resync adds the keys that keys returns every period (on the Config's
// clock), once the caches have synced, until ctx ends; run it beside Run.
func (q *Queue) Resync(ctx context.Context, period time.Duration, keys func() []string) {
	if !cache.WaitForCacheSync(ctx.Done(), q.synced...) {
		return
	}
	t := q.cfg.Clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			for _, k := range keys() {
				q.Add(k)
			}
		}
	}
}

// Event is a kind of informer event, for On.
type Event uint8

// The events.
const (
	Added Event = 1 << iota
	Updated
	Deleted
	AllEvents = Added | Updated | Deleted
)

// On returns an event handler calling fn with the object of each of the
// given events, as a T: the added object, the updated one's new state,
// the deleted one (unwrapped from its tombstone). Objects of other types
// are ignored.
func On[T any](events Event, fn func(T)) cache.ResourceEventHandler {
	call := func(obj any) {
		if t, ok := Object[T](obj); ok {
			fn(t)
		}
	}
	var h cache.ResourceEventHandlerFuncs
	if events&Added != 0 {
		h.AddFunc = call
	}
	if events&Updated != 0 {
		h.UpdateFunc = func(_, cur any) { call(cur) }
	}
	if events&Deleted != 0 {
		h.DeleteFunc = call
	}
	return h
}

// Object returns obj as a T, unwrapping a deletion tombstone.
func Object[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}

// Lookup returns the cached object a namespace/name key names, through a
// client-go lister's per-namespace accessor (as
// corelisters.PodLister.Pods); found is false when the key is malformed
// or the object is gone, and err is set only for other failures.
func Lookup[T any, L interface{ Get(name string) (T, error) }](key string, byNamespace func(namespace string) L) (obj T, found bool, err error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return obj, false, nil
	}
	obj, err = byNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return obj, false, nil
	}
	return obj, err == nil, err
}
