package status

import (
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// Manager holds the latest status of every pod the agent runs. It is the one
// place pod status is written: each pod's worker sets it after every sync,
// with a sequence number that only grows, so a write computed before a newer
// one that already landed is dropped. Readers (the HTTP API) get copies;
// the status sync (agent/statussync) is told of every change (Changed) and
// completes the deletion of the pods whose workers removed everything
// (Terminated).
type Manager struct {
	mu         sync.RWMutex
	pods       map[types.UID]*entry
	terminated map[types.UID]*v1.Pod // deleted in the apiserver, removed from the node
	changed    chan struct{}
}

type entry struct {
	pod     *v1.Pod
	seq     uint64
	version uint64
}

// NewManager returns an empty manager.
func NewManager() *Manager {
	return &Manager{pods: make(map[types.UID]*entry), terminated: map[types.UID]*v1.Pod{}, changed: make(chan struct{}, 1)}
}

// Changed receives a value after statuses changed or a pod terminated
// (one value for any number of changes since the last receive).
func (m *Manager) Changed() <-chan struct{} { return m.changed }

func (m *Manager) signal() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Set records pod (spec and metadata) with status st computed at sync number
// seq. It reports whether the stored status changed; a write with a seq not
// above the stored one is dropped.
func (m *Manager) Set(pod *v1.Pod, st v1.PodStatus, seq uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pods[pod.UID]
	if ok && seq <= e.seq {
		return false
	}
	if ok && e.pod.ResourceVersion == pod.ResourceVersion && equality.Semantic.DeepEqual(e.pod.Status, st) {
		e.seq = seq
		return false
	}
	p := pod.DeepCopy()
	p.Status = st
	version := uint64(1)
	if ok {
		version = e.version + 1
	}
	m.pods[pod.UID] = &entry{pod: p, seq: seq, version: version}
	m.signal()
	return true
}

// Get returns a copy of the pod with its latest status, and the number of
// times that status changed.
func (m *Manager) Get(uid types.UID) (*v1.Pod, uint64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, ok := m.pods[uid]
	if !ok {
		return nil, 0, false
	}
	return e.pod.DeepCopy(), e.version, true
}

// Status returns the latest status of a pod.
func (m *Manager) Status(uid types.UID) (v1.PodStatus, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, ok := m.pods[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *e.pod.Status.DeepCopy(), true
}

// Delete forgets a pod (it is gone from the node).
func (m *Manager) Delete(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
}

// Terminate forgets a pod whose worker removed everything it held, as
// Delete; a pod being deleted in the apiserver (a deletionTimestamp) is
// kept among Terminated, with its last status, until ForgetTerminated, for
// the status sync to write that status and finish its deletion.
func (m *Manager) Terminate(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, published := m.pods[pod.UID]
	delete(m.pods, pod.UID)
	if pod.DeletionTimestamp != nil {
		kept := pod.DeepCopy()
		if published {
			kept.Status = *e.pod.Status.DeepCopy()
		}
		m.terminated[pod.UID] = kept
		m.signal()
	}
}

// Terminated returns copies of the pods Terminate kept.
func (m *Manager) Terminated() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*v1.Pod, 0, len(m.terminated))
	for _, p := range m.terminated {
		out = append(out, p.DeepCopy())
	}
	return out
}

// ForgetTerminated drops a pod from Terminated (its deletion is complete).
func (m *Manager) ForgetTerminated(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.terminated, uid)
}

// List returns copies of every pod with its status, by namespace and name.
func (m *Manager) List() []v1.Pod {
	m.mu.RLock()
	out := make([]v1.Pod, 0, len(m.pods))
	for _, e := range m.pods {
		out = append(out, *e.pod.DeepCopy())
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b v1.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}
