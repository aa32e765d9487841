package replicaset

import (
	"math"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodDeletionCostAnnotation lowers or raises a pod's chance of being chosen
// for deletion on scale-down (lower cost goes first).
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// RankForDeletion orders pods so that the ones upstream's ReplicaSet
// controller deletes first come first. related are the active pods whose
// co-location counts (the ReplicaSet's own pods): a pod sharing its node
// with more of them goes before one that is alone. The order, first
// differing criterion wins:
//  1. not yet scheduled before scheduled;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. lower pod-deletion-cost before higher;
//  5. more related pods on the same node before fewer;
//  6. ready for less time before longer (on a log2 scale of the duration);
//  7. more container restarts before fewer;
//  8. newer before older (creation time on a log2 scale).
//
// It returns a new slice; pods is not modified.
func RankForDeletion(pods, related []*corev1.Pod, now time.Time) []*corev1.Pod {
	onNode := map[string]int{}
	for _, p := range related {
		if p.Spec.NodeName != "" && isActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranked := make([]rankedPod, len(pods))
	for i, p := range pods {
		r := 0
		if p.Spec.NodeName != "" {
			r = onNode[p.Spec.NodeName]
		}
		ranked[i] = rankedPod{pod: p, colocated: r}
	}
	sort.SliceStable(ranked, func(i, j int) bool { return deleteBefore(ranked[i], ranked[j], now) })
	out := make([]*corev1.Pod, len(ranked))
	for i := range ranked {
		out[i] = ranked[i].pod
	}
	return out
}

type rankedPod struct {
	pod       *corev1.Pod
	colocated int
}

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

func deleteBefore(a, b rankedPod, now time.Time) bool {
	p1, p2 := a.pod, b.pod
	if (p1.Spec.NodeName == "") != (p2.Spec.NodeName == "") {
		return p1.Spec.NodeName == ""
	}
	if phaseOrder[p1.Status.Phase] != phaseOrder[p2.Status.Phase] {
		return phaseOrder[p1.Status.Phase] < phaseOrder[p2.Status.Phase]
	}
	r1, r2 := isReady(p1), isReady(p2)
	if r1 != r2 {
		return !r1
	}
	if c1, c2 := deletionCost(p1), deletionCost(p2); c1 != c2 {
		return c1 < c2
	}
	if a.colocated != b.colocated {
		return a.colocated > b.colocated
	}
	if r1 && r2 {
		t1, t2 := readySince(p1), readySince(p2)
		if d := log2Bucket(t1, now) - log2Bucket(t2, now); d != 0 {
			return d < 0
		}
	}
	if rc1, rc2 := maxRestarts(p1), maxRestarts(p2); rc1 != rc2 {
		return rc1 > rc2
	}
	c1, c2 := p1.CreationTimestamp, p2.CreationTimestamp
	if c1.IsZero() != c2.IsZero() {
		return c1.IsZero()
	}
	if d := log2Bucket(c1, now) - log2Bucket(c2, now); d != 0 {
		return d < 0
	}
	return false
}

// log2Bucket is floor(log2(now - t in ns)), -1 for t not in the past.
func log2Bucket(t metav1.Time, now time.Time) int64 {
	d := now.Sub(t.Time)
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0 // invalid values are rejected by validation; treat as default
	}
	return int32(n)
}

func maxRestarts(p *corev1.Pod) int32 {
	var m int32
	for _, s := range p.Status.ContainerStatuses {
		m = max(m, s.RestartCount)
	}
	return m
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

func readySince(p *corev1.Pod) metav1.Time {
	if c := readyCondition(p); c != nil {
		return c.LastTransitionTime
	}
	return metav1.Time{}
}

// IsAvailable reports whether p has been ready for at least minReadySeconds
// at now (upstream's IsPodAvailable).
func IsAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !isReady(p) {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	since := readySince(p)
	return !since.IsZero() && since.Add(time.Duration(minReadySeconds)*time.Second).Before(now)
}

// isActive: neither finished nor being deleted.
func isActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}
