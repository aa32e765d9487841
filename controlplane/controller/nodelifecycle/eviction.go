package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// tolerates reports whether tol matches taint (upstream's matching: an
// empty effect matches all effects, an empty key with Exists matches all
// keys, Equal compares values).
func tolerates(tol *corev1.Toleration, taint *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case "", corev1.TolerationOpEqual:
		return tol.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}

// EvictionDeadline is when pod must leave a node with taints: the zero
// time and false when no NoExecute taint applies or every one is tolerated
// forever; now when some NoExecute taint is not tolerated at all;
// otherwise the earliest taint's TimeAdded plus the smallest matching
// tolerationSeconds (upstream's NoExecute taint eviction).
func EvictionDeadline(pod *corev1.Pod, taints []corev1.Taint, now time.Time) (time.Time, bool) {
	var deadline time.Time
	found := false
	for i := range taints {
		taint := &taints[i]
		if taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		var seconds *int64
		tolerated, forever := false, false
		for j := range pod.Spec.Tolerations {
			tol := &pod.Spec.Tolerations[j]
			if !tolerates(tol, taint) {
				continue
			}
			tolerated = true
			if tol.TolerationSeconds == nil {
				forever = true
				continue
			}
			if seconds == nil || *tol.TolerationSeconds < *seconds {
				seconds = tol.TolerationSeconds
			}
		}
		if !tolerated {
			return now, true
		}
		if seconds == nil && forever {
			continue
		}
		added := now
		if taint.TimeAdded != nil {
			added = taint.TimeAdded.Time
		}
		d := added.Add(time.Duration(max(*seconds, 0)) * time.Second)
		if !found || d.Before(deadline) {
			deadline, found = d, true
		}
	}
	return deadline, found
}

// EvictionPlan returns the pods to delete from a node with taints at now,
// and how long until the next pod's deadline (0: none pending).
func EvictionPlan(taints []corev1.Taint, pods []*corev1.Pod, now time.Time) ([]*corev1.Pod, time.Duration) {
	var evict []*corev1.Pod
	var next time.Duration
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		d, ok := EvictionDeadline(p, taints, now)
		if !ok {
			continue
		}
		if !d.After(now) {
			evict = append(evict, p)
			continue
		}
		if wait := d.Sub(now); next == 0 || wait < next {
			next = wait
		}
	}
	return evict, next
}
