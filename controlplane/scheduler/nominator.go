package scheduler

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	fw "berth/controlplane/scheduler/framework"
)

// nominator holds the pending pods nominated to a node by preemption, as
// upstream's: the scheduler's own nominations at once (the status patch
// reaches the informer later), the others as the informer reports them.
// Filtering counts a node's nominated pods of at least the pod's priority
// as if they ran there, so the room a preemption made goes to its
// preemptor and not to the next pod in line (a victim's replacement).
type nominator struct {
	mu     sync.RWMutex
	nodeOf map[types.UID]string
	byNode map[string]map[types.UID]*fw.PodInfo
}

func newNominator() *nominator {
	return &nominator{nodeOf: map[types.UID]string{}, byNode: map[string]map[types.UID]*fw.PodInfo{}}
}

// set nominates pi to node; an empty node removes its nomination.
func (n *nominator) set(pi *fw.PodInfo, node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.removeLocked(pi.Pod.UID)
	if node == "" {
		return
	}
	n.nodeOf[pi.Pod.UID] = node
	if n.byNode[node] == nil {
		n.byNode[node] = map[types.UID]*fw.PodInfo{}
	}
	n.byNode[node][pi.Pod.UID] = pi
}

// remove drops the nomination of the pod with uid, if any.
func (n *nominator) remove(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.removeLocked(uid)
}

func (n *nominator) removeLocked(uid types.UID) {
	node, ok := n.nodeOf[uid]
	if !ok {
		return
	}
	delete(n.nodeOf, uid)
	delete(n.byNode[node], uid)
	if len(n.byNode[node]) == 0 {
		delete(n.byNode, node)
	}
}

// update follows an informer update of a pending pod: the status's
// nomination wins, except that an update saying nothing of one (before and
// after) keeps the nomination the scheduler made itself.
func (n *nominator) update(old, pod *v1.Pod) {
	if old.Status.NominatedNodeName == "" && pod.Status.NominatedNodeName == "" {
		n.mu.RLock()
		node, ok := n.nodeOf[pod.UID]
		n.mu.RUnlock()
		if ok {
			n.setPod(pod, node)
		}
		return
	}
	n.setPod(pod, pod.Status.NominatedNodeName)
}

// setPod is set for a pod object.
func (n *nominator) setPod(pod *v1.Pod, node string) {
	if node == "" {
		n.remove(pod.UID)
		return
	}
	if pi, err := fw.NewPodInfo(pod); err == nil {
		n.set(pi, node)
	}
}

// onNode lists the pods nominated to node whose priority is at least
// pod's, pod itself left out.
func (n *nominator) onNode(node string, pod *v1.Pod) []*fw.PodInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	prio := corev1helpers.PodPriority(pod)
	var out []*fw.PodInfo
	for uid, pi := range n.byNode[node] {
		if uid != pod.UID && corev1helpers.PodPriority(pi.Pod) >= prio {
			out = append(out, pi)
		}
	}
	return out
}
