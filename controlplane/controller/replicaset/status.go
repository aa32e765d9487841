package replicaset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Reasons of the ReplicaFailure condition.
const (
	ReasonFailedCreate = "FailedCreate"
	ReasonFailedDelete = "FailedDelete"
)

// CalculateStatus is the status rs should have with owned as its active
// pods at now; manageErr is the error of this sync's create/delete step
// (it sets ReplicaFailure, and a clean sync clears it).
func CalculateStatus(rs *appsv1.ReplicaSet, owned []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	tmpl := labels.SelectorFromSet(rs.Spec.Template.Labels)
	var fully, ready, available int32
	for _, p := range owned {
		if tmpl.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if isReady(p) {
			ready++
			if IsAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	st.Replicas = int32(len(owned))
	st.FullyLabeledReplicas = fully
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	st.ObservedGeneration = rs.Generation

	failure := condition(st, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := ""
		if diff := len(owned) - int(replicas(rs)); diff < 0 {
			reason = ReasonFailedCreate
		} else if diff > 0 {
			reason = ReasonFailedDelete
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: reason,
			Message: manageErr.Error(), LastTransitionTime: metav1.NewTime(now),
		})
	case manageErr == nil && failure != nil:
		var kept []appsv1.ReplicaSetCondition
		for _, c := range st.Conditions {
			if c.Type != appsv1.ReplicaSetReplicaFailure {
				kept = append(kept, c)
			}
		}
		st.Conditions = kept
	}
	return st
}

func condition(st appsv1.ReplicaSetStatus, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}
