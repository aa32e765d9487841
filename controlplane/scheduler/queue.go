package scheduler

import (
	"container/heap"
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Queue timing defaults, as upstream's.
const (
	DefaultInitialBackoff = 1 * time.Second
	DefaultMaxBackoff     = 10 * time.Second
	// maxInUnschedulable is how long a pod stays parked without a cluster
	// event before it is retried anyway.
	maxInUnschedulable = 5 * time.Minute
	backoffFlushPeriod = 1 * time.Second
	unschedFlushPeriod = 30 * time.Second
)

// QueuedPodInfo is a pod waiting in the scheduling queue.
type QueuedPodInfo struct {
	Pod *v1.Pod
	// Timestamp is when the pod was last added to the queue (or failed).
	Timestamp time.Time
	// InitialAttemptTimestamp is when the pod was first popped.
	InitialAttemptTimestamp time.Time
	// Attempts counts scheduling attempts.
	Attempts int
	// UnschedulablePlugins are the plugins that rejected the last attempt.
	UnschedulablePlugins sets.Set[string]
	// cycle is the scheduling cycle of the last Pop.
	cycle int64
}

// podHeap is a heap of pods with an index by key.
type podHeap struct {
	items []*QueuedPodInfo
	index map[string]int
	less  func(a, b *QueuedPodInfo) bool
}

func newPodHeap(less func(a, b *QueuedPodInfo) bool) *podHeap {
	return &podHeap{index: map[string]int{}, less: less}
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[podKey(h.items[i].Pod)] = i
	h.index[podKey(h.items[j].Pod)] = j
}
func (h *podHeap) Push(x any) {
	p := x.(*QueuedPodInfo)
	h.index[podKey(p.Pod)] = len(h.items)
	h.items = append(h.items, p)
}
func (h *podHeap) Pop() any {
	p := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	delete(h.index, podKey(p.Pod))
	return p
}

func (h *podHeap) get(key string) *QueuedPodInfo {
	if i, ok := h.index[key]; ok {
		return h.items[i]
	}
	return nil
}
func (h *podHeap) add(p *QueuedPodInfo) { heap.Push(h, p) }
func (h *podHeap) remove(key string) *QueuedPodInfo {
	i, ok := h.index[key]
	if !ok {
		return nil
	}
	return heap.Remove(h, i).(*QueuedPodInfo)
}
func (h *podHeap) update(p *QueuedPodInfo) {
	if i, ok := h.index[podKey(p.Pod)]; ok {
		h.items[i] = p
		heap.Fix(h, i)
	}
}
func (h *podHeap) peek() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// QueueConfig configures a Queue.
type QueueConfig struct {
	Clock clock.WithTicker
	// InitialBackoff and MaxBackoff bound the per-pod back-off, doubling
	// per failed attempt (defaults 1s and 10s).
	InitialBackoff, MaxBackoff time.Duration
	// OnChange, if set, is called with the queue lengths after each change
	// (under the queue's lock; it must not call the queue).
	OnChange func(active, backoff, unschedulable int)
}

// Queue is the scheduling queue: activeQ ordered by priority then arrival,
// backoffQ ordered by back-off expiry, and the parked unschedulable pods
// that cluster events move back.
type Queue struct {
	cfg  QueueConfig
	mu   sync.Mutex
	cond *sync.Cond

	active        *podHeap
	backoff       *podHeap
	unschedulable map[string]*QueuedPodInfo
	inFlight      map[string]bool

	schedulingCycle  int64
	moveRequestCycle int64
	closed           bool
}

// NewQueue returns an empty queue.
func NewQueue(cfg QueueConfig) *Queue {
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = DefaultInitialBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	q := &Queue{cfg: cfg, unschedulable: map[string]*QueuedPodInfo{}, inFlight: map[string]bool{}, moveRequestCycle: -1}
	q.cond = sync.NewCond(&q.mu)
	q.active = newPodHeap(func(a, b *QueuedPodInfo) bool {
		pa, pb := corev1helpers.PodPriority(a.Pod), corev1helpers.PodPriority(b.Pod)
		return pa > pb || (pa == pb && a.Timestamp.Before(b.Timestamp))
	})
	q.backoff = newPodHeap(func(a, b *QueuedPodInfo) bool {
		return q.backoffExpiry(a).Before(q.backoffExpiry(b))
	})
	return q
}

// BackoffDuration is the back-off after attempts failed attempts: the
// initial back-off doubled per further attempt, capped at the maximum.
func (q *Queue) BackoffDuration(attempts int) time.Duration {
	d := q.cfg.InitialBackoff
	for i := 1; i < attempts; i++ {
		if d > q.cfg.MaxBackoff-d {
			return q.cfg.MaxBackoff
		}
		d += d
	}
	return min(d, q.cfg.MaxBackoff)
}

func (q *Queue) backoffExpiry(p *QueuedPodInfo) time.Time {
	return p.Timestamp.Add(q.BackoffDuration(p.Attempts))
}

func (q *Queue) isBackingOff(p *QueuedPodInfo) bool {
	return p.Attempts > 0 && q.backoffExpiry(p).After(q.cfg.Clock.Now())
}

func (q *Queue) changed() {
	if q.cfg.OnChange != nil {
		q.cfg.OnChange(q.active.Len(), q.backoff.Len(), len(q.unschedulable))
	}
}

func (q *Queue) has(key string) bool {
	return q.active.get(key) != nil || q.backoff.get(key) != nil || q.unschedulable[key] != nil
}

// Add queues a new pending pod in activeQ (or refreshes it if queued).
func (q *Queue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	if q.has(key) {
		q.updateLocked(pod)
		return
	}
	q.active.add(&QueuedPodInfo{Pod: pod, Timestamp: q.cfg.Clock.Now()})
	q.cond.Broadcast()
	q.changed()
}

// Update refreshes a queued pod's object. A parked pod whose spec,
// labels or annotations changed is moved back (to backoffQ if still
// backing off); a status-only change leaves it parked. A pod not queued
// and not being scheduled is added.
func (q *Queue) Update(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	if q.inFlight[key] {
		return
	}
	if !q.has(key) {
		q.active.add(&QueuedPodInfo{Pod: pod, Timestamp: q.cfg.Clock.Now()})
		q.cond.Broadcast()
		q.changed()
		return
	}
	q.updateLocked(pod)
}

func (q *Queue) updateLocked(pod *v1.Pod) {
	key := podKey(pod)
	if p := q.active.get(key); p != nil {
		p.Pod = pod
		q.active.update(p)
		return
	}
	if p := q.backoff.get(key); p != nil {
		p.Pod = pod
		return
	}
	if p := q.unschedulable[key]; p != nil {
		old := p.Pod
		p.Pod = pod
		if specChanged(old, pod) {
			delete(q.unschedulable, key)
			q.requeueLocked(p)
			q.cond.Broadcast()
			q.changed()
		}
	}
}

// specChanged reports whether a change other than status and bookkeeping
// metadata happened.
func specChanged(a, b *v1.Pod) bool {
	return !equality.Semantic.DeepEqual(a.Spec, b.Spec) || !equality.Semantic.DeepEqual(a.Labels, b.Labels) || !equality.Semantic.DeepEqual(a.Annotations, b.Annotations)
}

// requeueLocked puts a pod leaving the unschedulable set into backoffQ or
// activeQ.
func (q *Queue) requeueLocked(p *QueuedPodInfo) {
	if q.isBackingOff(p) {
		q.backoff.add(p)
	} else {
		q.active.add(p)
	}
}

// Delete drops a pod from the queue.
func (q *Queue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	q.active.remove(key)
	q.backoff.remove(key)
	delete(q.unschedulable, key)
	q.changed()
}

// Pop blocks until a pod is in activeQ and returns it, marking it in
// flight; it returns nil once the queue is closed.
func (q *Queue) Pop() *QueuedPodInfo {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil
	}
	p := heap.Pop(q.active).(*QueuedPodInfo)
	q.schedulingCycle++
	p.cycle = q.schedulingCycle
	p.Attempts++
	if p.InitialAttemptTimestamp.IsZero() {
		p.InitialAttemptTimestamp = q.cfg.Clock.Now()
	}
	q.inFlight[podKey(p.Pod)] = true
	q.changed()
	return p
}

// Done ends a pod's scheduling attempt (successful or requeued).
func (q *Queue) Done(pod *v1.Pod) {
	q.mu.Lock()
	delete(q.inFlight, podKey(pod))
	q.mu.Unlock()
}

// AddUnschedulableIfNotPresent requeues a pod after a failed attempt. An
// unschedulable pod is parked until a cluster event, unless such an event
// came while it was being scheduled, in which case it waits out its
// back-off in backoffQ; a pod that failed with an error always goes to
// backoffQ.
func (q *Queue) AddUnschedulableIfNotPresent(p *QueuedPodInfo, unschedulable bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(p.Pod)
	delete(q.inFlight, key)
	if q.has(key) {
		return
	}
	p.Timestamp = q.cfg.Clock.Now()
	if !unschedulable || q.moveRequestCycle >= p.cycle {
		q.backoff.add(p)
	} else {
		q.unschedulable[key] = p
	}
	q.changed()
}

// MoveAllToActiveOrBackoffQueue moves the parked pods that match (all when
// match is nil) back for another attempt: activeQ, or backoffQ while
// backing off. Pods in flight that fail afterwards skip parking.
func (q *Queue) MoveAllToActiveOrBackoffQueue(match func(*QueuedPodInfo) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	moved := false
	for key, p := range q.unschedulable {
		if match != nil && !match(p) {
			continue
		}
		delete(q.unschedulable, key)
		q.requeueLocked(p)
		moved = true
	}
	q.moveRequestCycle = q.schedulingCycle
	if moved {
		q.cond.Broadcast()
		q.changed()
	}
}

// FlushBackoffCompleted moves pods whose back-off expired to activeQ.
func (q *Queue) FlushBackoffCompleted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Clock.Now()
	moved := false
	for {
		p := q.backoff.peek()
		if p == nil || q.backoffExpiry(p).After(now) {
			break
		}
		q.backoff.remove(podKey(p.Pod))
		q.active.add(p)
		moved = true
	}
	if moved {
		q.cond.Broadcast()
		q.changed()
	}
}

// FlushUnschedulableLeftover moves pods parked longer than 5 minutes back.
func (q *Queue) FlushUnschedulableLeftover() {
	now := q.cfg.Clock.Now()
	q.MoveAllToActiveOrBackoffQueue(func(p *QueuedPodInfo) bool {
		return now.Sub(p.Timestamp) > maxInUnschedulable
	})
}

// Lengths returns the sizes of activeQ, backoffQ and the unschedulable set.
func (q *Queue) Lengths() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len(), len(q.unschedulable)
}

// Run flushes backoffQ every second and the unschedulable set every 30
// seconds until ctx ends, then closes the queue (Pop returns nil).
func (q *Queue) Run(ctx context.Context) {
	b := q.cfg.Clock.NewTicker(backoffFlushPeriod)
	u := q.cfg.Clock.NewTicker(unschedFlushPeriod)
	defer b.Stop()
	defer u.Stop()
	for {
		select {
		case <-ctx.Done():
			q.Close()
			return
		case <-b.C():
			q.FlushBackoffCompleted()
		case <-u.C():
			q.FlushUnschedulableLeftover()
		}
	}
}

// Close wakes Pop callers; Pop returns nil from then on.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}
