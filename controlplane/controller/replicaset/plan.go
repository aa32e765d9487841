// Package replicaset is berth's ReplicaSet controller: it keeps the number of
// active pods a ReplicaSet controls equal to spec.replicas, adopting and
// releasing pods by selector, and writes the ReplicaSet's status.
//
// The decisions are pure functions (Claim, Manage, SlowStartBatches,
// RankForDeletion, CalculateStatus) of the ReplicaSet, the pods in the
// informer cache, the expectations and the time; Controller executes them
// against the apiserver in this order: adopt/release, create or delete,
// write status.
package replicaset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"berth/controlplane/controller/controllerref"
)

// BurstReplicas caps the pods created or deleted in one sync (upstream's 500).
const BurstReplicas = 500

// SlowStartInitialBatchSize is the size of the first creation batch; each
// later batch doubles while the previous one fully succeeded.
const SlowStartInitialBatchSize = 1

// Claim decides which of pods (all pods of the ReplicaSet's namespace) the
// ReplicaSet owns, adopts and releases. Only active pods (not finished, not
// being deleted) are considered.
func Claim(rs *appsv1.ReplicaSet, sel labels.Selector, pods []*corev1.Pod) controllerref.Claim[*corev1.Pod] {
	active := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if isActive(p) {
			active = append(active, p)
		}
	}
	return controllerref.Plan(rs, sel, active)
}

// ManagePlan is what a sync does to the pod count: create Create pods from
// the template, or delete Delete (in that order of preference).
type ManagePlan struct {
	Create int
	Delete []*corev1.Pod
}

// Manage compares owned (the ReplicaSet's active pods) with spec.replicas.
// Nothing happens while expectations are unsatisfied (the cache has not yet
// seen earlier creations or deletions) or while the ReplicaSet is being
// deleted. At most BurstReplicas pods are created or deleted; the pods to
// delete are the first of RankForDeletion's order, co-location counted
// over related (the active pods of every ReplicaSet with the same owner,
// as upstream; owned when nil).
func Manage(rs *appsv1.ReplicaSet, owned, related []*corev1.Pod, expectationsSatisfied bool, now time.Time) ManagePlan {
	if !expectationsSatisfied || rs.DeletionTimestamp != nil {
		return ManagePlan{}
	}
	diff := len(owned) - int(replicas(rs))
	switch {
	case diff < 0:
		return ManagePlan{Create: min(-diff, BurstReplicas)}
	case diff > 0:
		n := min(diff, BurstReplicas)
		if related == nil {
			related = owned
		}
		return ManagePlan{Delete: RankForDeletion(owned, related, now)[:n]}
	}
	return ManagePlan{}
}

// SlowStartBatches splits count creations into batches of 1, 2, 4, …: the
// executor stops at the first batch with a failure, so a failing template
// costs a few calls instead of count.
func SlowStartBatches(count int) []int {
	var out []int
	for b := min(count, SlowStartInitialBatchSize); b > 0; {
		out = append(out, b)
		count -= b
		b = min(2*b, count)
	}
	return out
}

// RelatedPods returns the active pods controlled by rs or by any of
// siblings (ReplicaSets with the same controller as rs); rs alone when it
// has no controller.
func RelatedPods(rs *appsv1.ReplicaSet, siblings []*appsv1.ReplicaSet, pods []*corev1.Pod) []*corev1.Pod {
	uids := map[types.UID]bool{rs.UID: true}
	if owner := metav1.GetControllerOfNoCopy(rs); owner != nil {
		for _, s := range siblings {
			if ref := metav1.GetControllerOfNoCopy(s); ref != nil && ref.UID == owner.UID {
				uids[s.UID] = true
			}
		}
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && uids[ref.UID] && isActive(p) {
			out = append(out, p)
		}
	}
	return out
}

func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}
