package podruntime

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"berth/agent/podstate"
)

// Cache holds every pod the runtime held at the latest relist, with the
// time that relist started: the one observation of the runtime that the
// PLEG and the pod workers share, as the kubelet's pod cache. A worker that
// changed its pod at time t reads it with GetNewerThan(t), which waits for
// (and, when none is under way, starts) a relist begun after t; a read that
// needs nothing newer costs no CRI call. Relists are serialised and shared:
// every reader waiting when one starts is served by it. It is safe for
// concurrent use.
type Cache struct {
	reader *Reader

	mu        sync.Mutex
	pods      map[types.UID]*podstate.Pod
	timestamp time.Time // when the latest successful relist started; zero before the first
	inflight  *relist   // the relist under way, if any
}

// relist is one listing of the runtime; done closes when it ended.
type relist struct {
	start time.Time
	done  chan struct{}
	err   error
}

// relistTimeout bounds a relist, which runs on past the context of the
// reader that started it (others wait on it too).
const relistTimeout = 2 * time.Minute

// NewCache returns an empty cache filled by relisting through reader.
func NewCache(reader *Reader) *Cache {
	return &Cache{reader: reader, pods: map[types.UID]*podstate.Pod{}}
}

// Relist lists the runtime (a relist started by this call or one already
// begun after it was made) and returns every pod it found. The map and its
// pods are shared: callers must not change them.
func (c *Cache) Relist(ctx context.Context) (map[types.UID]*podstate.Pod, error) {
	if err := c.newerThan(ctx, time.Now()); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods, nil
}

// GetNewerThan returns the pod as a relist begun after min saw it (an empty
// Pod when the runtime held nothing of it), relisting when the cache is not
// that new. The pod is shared: callers must not change it.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, min time.Time) (*podstate.Pod, error) {
	if err := c.newerThan(ctx, min); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pods[uid]; p != nil {
		return p, nil
	}
	return &podstate.Pod{UID: uid}, nil
}

// Forget drops the reader's cached statuses of a pod's containers and
// sandboxes (they were removed).
func (c *Cache) Forget(p *podstate.Pod) { c.reader.Forget(p) }

// newerThan returns once the cache holds a relist begun after min, or the
// error of the relist that should have given it.
func (c *Cache) newerThan(ctx context.Context, min time.Time) error {
	for {
		c.mu.Lock()
		if c.timestamp.After(min) {
			c.mu.Unlock()
			return nil
		}
		if r := c.inflight; r != nil {
			c.mu.Unlock()
			select {
			case <-r.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if r.err != nil && r.start.After(min) {
				return r.err
			}
			continue // a relist begun before min: start another
		}
		r := &relist{start: time.Now(), done: make(chan struct{})}
		c.inflight = r
		c.mu.Unlock()
		go c.run(context.WithoutCancel(ctx), r)
	}
}

// run lists the runtime for r and stores what it found.
func (c *Cache) run(ctx context.Context, r *relist) {
	ctx, cancel := context.WithTimeout(ctx, relistTimeout)
	defer cancel()
	pods, err := c.reader.All(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	r.err = err
	if err == nil {
		c.pods, c.timestamp = pods, r.start
	}
	c.inflight = nil
	close(r.done)
}
