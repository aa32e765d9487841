package replicaset

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ExpectationsTTL is how long unfulfilled expectations hold back a sync
// before they are considered lost (upstream's 5 minutes).
const ExpectationsTTL = 5 * time.Minute

// Expectations records, per ReplicaSet key, the pod creations and deletions
// the controller has issued but not yet seen in its cache, so that a sync
// running on a stale cache does not create or delete the same pods twice.
// Deletions are tracked by pod key, so a pod seen terminating and later
// seen deleted is counted once.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]*expectation
}

type expectation struct {
	adds      int
	deletes   map[string]bool
	timestamp time.Time
}

// NewExpectations returns empty expectations timed by clk.
func NewExpectations(clk clock.PassiveClock) *Expectations {
	return &Expectations{clock: clk, m: map[string]*expectation{}}
}

// Satisfied reports whether rsKey has no outstanding expectations (none
// recorded, all observed, or older than ExpectationsTTL).
func (e *Expectations) Satisfied(rsKey string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[rsKey]
	if !ok {
		return true
	}
	if x.adds <= 0 && len(x.deletes) == 0 {
		return true
	}
	return e.clock.Since(x.timestamp) > ExpectationsTTL
}

// ExpectCreations records that adds pods are about to be created for rsKey.
func (e *Expectations) ExpectCreations(rsKey string, adds int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[rsKey] = &expectation{adds: adds, deletes: map[string]bool{}, timestamp: e.clock.Now()}
}

// ExpectDeletions records that the pods podKeys are about to be deleted.
func (e *Expectations) ExpectDeletions(rsKey string, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{deletes: map[string]bool{}, timestamp: e.clock.Now()}
	for _, k := range podKeys {
		x.deletes[k] = true
	}
	e.m[rsKey] = x
}

// CreationObserved lowers rsKey's expected creations by one (a pod was seen,
// or a creation failed or was skipped).
func (e *Expectations) CreationObserved(rsKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[rsKey]; ok {
		x.adds--
	}
}

// DeletionObserved records that podKey's deletion was seen (or failed).
func (e *Expectations) DeletionObserved(rsKey, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[rsKey]; ok {
		delete(x.deletes, podKey)
	}
}

// Delete forgets rsKey (the ReplicaSet is gone).
func (e *Expectations) Delete(rsKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, rsKey)
}
