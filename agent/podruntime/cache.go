package podruntime

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"berth/agent/podstate"
)

// Cache holds what the runtime held for each pod, with the time the read
// that saw it started: the one observation of the runtime that the PLEG and
// the pod workers share, as the kubelet's pod cache. The PLEG's Relist lists
// every pod; a worker that changed its pod at time t reads it with
// GetNewerThan(t), which, when neither the last relist nor a read of that
// pod began after t, reads that one pod (two filtered list calls) instead
// of waiting for the next relist. A read that needs nothing newer costs no
// CRI call, and concurrent readers of a pod share one read. It is safe for
// concurrent use.
type Cache struct {
	reader *Reader

	mu        sync.Mutex
	pods      map[types.UID]entry
	timestamp time.Time           // when the latest successful relist started; zero before the first
	relisting *read               // the relist under way, if any
	reading   map[types.UID]*read // the reads of one pod under way
}

// entry is one pod as a read begun at ts saw it; pod is nil when the
// runtime held nothing of it.
type entry struct {
	pod *podstate.Pod
	ts  time.Time
}

// read is one listing of the runtime (all pods or one); done closes when
// it ended.
type read struct {
	start time.Time
	done  chan struct{}
	err   error
}

// readTimeout bounds a read, which runs on past the context of the reader
// that started it (others may wait on it too).
const readTimeout = 2 * time.Minute

// NewCache returns an empty cache filled by reading through reader.
func NewCache(reader *Reader) *Cache {
	return &Cache{reader: reader, pods: map[types.UID]entry{}, reading: map[types.UID]*read{}}
}

// Relist lists every pod the runtime holds into the cache (after the relist
// under way, if any, ends) and returns them. The map and its pods are
// shared: callers must not change them.
func (c *Cache) Relist(ctx context.Context) (map[types.UID]*podstate.Pod, error) {
	c.mu.Lock()
	for c.relisting != nil {
		r := c.relisting
		c.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.mu.Lock()
	}
	r := &read{start: time.Now(), done: make(chan struct{})}
	c.relisting = r
	c.mu.Unlock()

	pods, err := c.reader.All(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		next := make(map[types.UID]entry, len(pods))
		for uid, p := range pods {
			next[uid] = entry{pod: p, ts: r.start}
		}
		for uid, e := range c.pods {
			if e.ts.After(r.start) {
				next[uid] = e // a read of the pod begun after the relist did
			}
		}
		c.pods, c.timestamp = next, r.start
	}
	r.err = err
	c.relisting = nil
	close(r.done)
	return pods, err
}

// GetNewerThan returns the pod as a read begun after min saw it (an empty
// Pod when the runtime held nothing of it), reading it when the cache is
// not that new. The pod is shared: callers must not change it.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, min time.Time) (*podstate.Pod, error) {
	for {
		c.mu.Lock()
		e, ok := c.pods[uid]
		if c.timestamp.After(min) || (ok && e.ts.After(min)) {
			c.mu.Unlock()
			if e.pod == nil {
				return &podstate.Pod{UID: uid}, nil
			}
			return e.pod, nil
		}
		r := c.reading[uid]
		if r == nil {
			r = &read{start: time.Now(), done: make(chan struct{})}
			c.reading[uid] = r
			go c.readPod(context.WithoutCancel(ctx), uid, r)
		}
		c.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if r.err != nil && r.start.After(min) {
			return nil, r.err
		}
	}
}

// readPod reads one pod for r and stores what it found.
func (c *Cache) readPod(ctx context.Context, uid types.UID, r *read) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	p, err := c.reader.Pod(ctx, uid)
	c.mu.Lock()
	defer c.mu.Unlock()
	r.err = err
	if e := c.pods[uid]; err == nil && r.start.After(e.ts) {
		if len(p.Sandboxes)+len(p.Containers) == 0 {
			p = nil
		}
		c.pods[uid] = entry{pod: p, ts: r.start}
	}
	delete(c.reading, uid)
	close(r.done)
}

// Forget drops the reader's cached statuses of a pod's containers and
// sandboxes (they were removed).
func (c *Cache) Forget(p *podstate.Pod) { c.reader.Forget(p) }
