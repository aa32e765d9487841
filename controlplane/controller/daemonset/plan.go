package daemonset

import (
	"slices"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"berth/controlplane/controller/replicaset"
)

// ShouldRun reports whether ds's pod should run on node (shouldRun: the
// node's name, the template's node selector and required node affinity
// match, and every NoSchedule and NoExecute taint is tolerated) and whether
// a pod already there may stay (shouldContinue: the same, except that only
// NoExecute taints must be tolerated). The daemon tolerations count.
func ShouldRun(node *corev1.Node, ds *appsv1.DaemonSet) (shouldRun, shouldContinue bool) {
	if n := ds.Spec.Template.Spec.NodeName; n != "" && n != node.Name {
		return false, false
	}
	pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: *ds.Spec.Template.Spec.DeepCopy()}
	pod.Spec.NodeName = node.Name
	addDaemonTolerations(&pod.Spec)
	if fits, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !fits {
		return false, false
	}
	taints := node.Spec.Taints
	if _, untolerated := v1helper.FindMatchingUntoleratedTaint(logr.Discard(), taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
	}, false); !untolerated {
		return true, true
	}
	_, untoleratedNoExecute := v1helper.FindMatchingUntoleratedTaint(logr.Discard(), taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return false, !untoleratedNoExecute
}

// State is what a sync decides from: the daemon set, every node, ds's pods
// grouped by the node they are for (TargetNode), the current revision's
// hash, the nodes whose failed pods are in back-off, and the time.
type State struct {
	DS         *appsv1.DaemonSet
	Nodes      []*corev1.Node
	PodsByNode map[string][]*corev1.Pod
	Hash       string
	// InBackoff reports whether a failed pod on node may not be replaced
	// yet; nil means never.
	InBackoff func(node string) bool
	Now       time.Time
}

// Plan is what a sync does: create a pod on each of CreateOn, delete
// Delete (Failed among them: failed pods being replaced).
type Plan struct {
	CreateOn []string
	Delete   []*corev1.Pod
	Failed   []*corev1.Pod
	// Backoff lists the nodes whose failed pod was kept for back-off
	// (the sync looks again later).
	Backoff []string
}

// Decide plans a sync: each node that should run the pod gets one, extra
// pods on a node are deleted (the oldest kept), failed and succeeded pods
// are deleted to be replaced, pods on nodes that should not keep them or
// that are gone are deleted; when none of that is to be done, with the
// RollingUpdate strategy, old pods are replaced within maxUnavailable or
// maxSurge (rollingUpdate).
func Decide(s State) Plan {
	var p Plan
	ds := s.DS
	if ds.DeletionTimestamp != nil {
		return p
	}
	surge := allowsSurge(ds)
	known := map[string]bool{}
	for _, node := range s.Nodes {
		known[node.Name] = true
		shouldRun, shouldContinue := ShouldRun(node, ds)
		pods := s.PodsByNode[node.Name]
		switch {
		case shouldRun && len(pods) == 0:
			p.CreateOn = append(p.CreateOn, node.Name)
		case shouldContinue:
			var running []*corev1.Pod
			for _, pod := range pods {
				switch {
				case pod.DeletionTimestamp != nil:
				case pod.Status.Phase == corev1.PodFailed:
					if s.InBackoff != nil && s.InBackoff(node.Name) {
						p.Backoff = append(p.Backoff, node.Name)
						continue
					}
					p.Failed = append(p.Failed, pod)
					p.Delete = append(p.Delete, pod)
				case pod.Status.Phase == corev1.PodSucceeded:
					p.Delete = append(p.Delete, pod)
				default:
					running = append(running, pod)
				}
			}
			if surge && shouldRun && len(running) == 0 {
				// With surge a replacement need not wait for the deletion.
				p.CreateOn = append(p.CreateOn, node.Name)
			}
			p.Delete = append(p.Delete, extraPods(ds, running, surge, s.Hash, s.Now)...)
		case len(pods) > 0:
			for _, pod := range pods {
				if pod.DeletionTimestamp == nil {
					p.Delete = append(p.Delete, pod)
				}
			}
		}
	}
	// Pods for nodes that no longer exist.
	for node, pods := range s.PodsByNode {
		if known[node] {
			continue
		}
		for _, pod := range pods {
			if pod.DeletionTimestamp == nil {
				p.Delete = append(p.Delete, pod)
			}
		}
	}
	// As upstream, the rolling update waits for a sync with nothing else to
	// do: it counts only the nodes that have pods, so a node whose old pod
	// is gone and whose new one is being created here would not count
	// against maxUnavailable, and another old pod would go with it.
	if ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType && len(p.CreateOn) == 0 && len(p.Delete) == 0 {
		ru := rollingUpdate(s)
		p.CreateOn, p.Delete = ru.CreateOn, ru.Delete
	}
	return p
}

// extraPods returns the running pods on one node to delete: without surge
// all but the oldest; with surge all but the oldest new and the oldest old
// pod, and the old one too once it is not ready or the new one is
// available.
func extraPods(ds *appsv1.DaemonSet, running []*corev1.Pod, surge bool, hash string, now time.Time) []*corev1.Pod {
	if len(running) <= 1 {
		return nil
	}
	sorted := slices.Clone(running)
	slices.SortStableFunc(sorted, olderFirst)
	if !surge {
		return sorted[1:]
	}
	var del []*corev1.Pod
	var oldestNew, oldestOld *corev1.Pod
	for _, pod := range sorted {
		if isUpdated(pod, ds, hash) {
			if oldestNew == nil {
				oldestNew = pod
				continue
			}
		} else if oldestOld == nil {
			oldestOld = pod
			continue
		}
		del = append(del, pod)
	}
	if oldestNew != nil && oldestOld != nil &&
		(!isReady(oldestOld) || replicaset.IsAvailable(oldestNew, ds.Spec.MinReadySeconds, now)) {
		del = append(del, oldestOld)
	}
	return del
}

// olderFirst orders pods by creation time, then running before pending
// ones, then by name.
func olderFirst(a, b *corev1.Pod) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	ra, rb := a.Status.Phase == corev1.PodRunning, b.Status.Phase == corev1.PodRunning
	if ra != rb {
		if ra {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func allowsSurge(ds *appsv1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxSurge == nil {
		return false
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, 1, true)
	return err == nil && n > 0
}

// budgets returns maxSurge and maxUnavailable as numbers of nodes out of
// desired (percentages rounded up); with both 0, maxUnavailable is 1.
func budgets(ds *appsv1.DaemonSet, desired int) (maxSurge, maxUnavailable int) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru != nil {
		if ru.MaxSurge != nil {
			maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
		}
		if ru.MaxUnavailable != nil {
			maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true)
		}
	}
	if maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable
}

// updatedOnNode splits a node's live pods into the one made from the
// current revision and the old one; ok is false when there are two of
// either (the node is being fixed up first).
func updatedOnNode(ds *appsv1.DaemonSet, pods []*corev1.Pod, hash string) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if isUpdated(pod, ds, hash) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = pod
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = pod
		}
	}
	return newPod, oldPod, true
}

// rollingUpdate replaces old pods. Without surge: old pods that are not
// available are deleted at once, available ones while fewer than
// maxUnavailable nodes are unavailable. With surge: a new pod is created
// beside an available old one on up to maxSurge nodes, and an old pod is
// deleted once the new one beside it is available.
func rollingUpdate(s State) Plan {
	ds := s.DS
	var p Plan
	desired := 0
	nodes := map[string]*corev1.Node{}
	for _, n := range s.Nodes {
		nodes[n.Name] = n
		if run, _ := ShouldRun(n, ds); run {
			desired++
		}
	}
	maxSurge, maxUnavailable := budgets(ds, desired)
	available := func(pod *corev1.Pod) bool { return replicaset.IsAvailable(pod, ds.Spec.MinReadySeconds, s.Now) }
	names := make([]string, 0, len(s.PodsByNode))
	for n := range s.PodsByNode {
		names = append(names, n)
	}
	slices.Sort(names)
	if maxSurge == 0 {
		unavailable := 0
		var replace, candidates []*corev1.Pod
		for _, node := range names {
			newPod, oldPod, ok := updatedOnNode(ds, s.PodsByNode[node], s.Hash)
			switch {
			case !ok, oldPod == nil && newPod == nil, oldPod != nil && newPod != nil:
				unavailable++
			case newPod != nil:
				if !available(newPod) {
					unavailable++
				}
			case !available(oldPod):
				replace = append(replace, oldPod)
				unavailable++
			case unavailable < maxUnavailable:
				candidates = append(candidates, oldPod)
			}
		}
		remaining := max(0, min(maxUnavailable-unavailable, len(candidates)))
		p.Delete = append(replace, candidates[:remaining]...)
		return p
	}
	var numSurge, numAvailable int
	var allowedNew, candidateNew []string
	var shouldNotRun []*corev1.Pod
	for _, node := range names {
		newPod, oldPod, ok := updatedOnNode(ds, s.PodsByNode[node], s.Hash)
		if !ok {
			numSurge++
			continue
		}
		if (oldPod != nil && available(oldPod)) || (oldPod == nil && newPod != nil && available(newPod)) {
			numAvailable++
		}
		run := false
		if n := nodes[node]; n != nil {
			run, _ = ShouldRun(n, ds)
		}
		switch {
		case oldPod == nil:
		case newPod == nil:
			switch {
			case !available(oldPod):
				if !run {
					p.Delete = append(p.Delete, oldPod)
					continue
				}
				allowedNew = append(allowedNew, node)
			case !run:
				shouldNotRun = append(shouldNotRun, oldPod)
			case numSurge < maxSurge:
				candidateNew = append(candidateNew, node)
			}
		default:
			if !available(newPod) {
				numSurge++
				continue
			}
			p.Delete = append(p.Delete, oldPod)
		}
	}
	if deletable := numAvailable - desired; deletable > 0 {
		p.Delete = append(p.Delete, shouldNotRun[:min(deletable, len(shouldNotRun))]...)
	}
	remaining := max(0, min(maxSurge-numSurge, len(candidateNew)))
	p.CreateOn = append(allowedNew, candidateNew[:remaining]...)
	return p
}

// Status is ds's status for s (the counts over the nodes that should run
// it, the oldest pod on each counting), keeping the collision count.
func Status(s State) appsv1.DaemonSetStatus {
	ds := s.DS
	st := appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, CollisionCount: ds.Status.CollisionCount, Conditions: ds.Status.Conditions}
	for _, node := range s.Nodes {
		shouldRun, _ := ShouldRun(node, ds)
		var live []*corev1.Pod
		for _, p := range s.PodsByNode[node.Name] {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
				live = append(live, p)
			}
		}
		if !shouldRun {
			if len(live) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(live) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		slices.SortStableFunc(live, olderFirst)
		pod := live[0]
		if isReady(pod) {
			st.NumberReady++
			if replicaset.IsAvailable(pod, ds.Spec.MinReadySeconds, s.Now) {
				st.NumberAvailable++
			}
		}
		if isUpdated(pod, ds, s.Hash) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	return st
}
