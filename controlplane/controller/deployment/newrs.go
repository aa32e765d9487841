package deployment

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// SplitReplicaSets finds d's new ReplicaSet among rss (the oldest whose
// template equals d's ignoring the hash label) and returns it with the
// others, the old ones.
func SplitReplicaSets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	sorted := append([]*appsv1.ReplicaSet(nil), rss...)
	byCreation(sorted)
	var newRS *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range sorted {
		if newRS == nil && EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}

// NewRSPlan is what PlanNewReplicaSet decided.
type NewRSPlan struct {
	// Create is the new ReplicaSet to create (nil: none).
	Create *appsv1.ReplicaSet
	// Update is the existing new ReplicaSet with its annotations and
	// minReadySeconds brought up to date (nil: nothing to write).
	Update *appsv1.ReplicaSet
	// NewRS is the new ReplicaSet as it will be once Create or Update is
	// done (nil when there is none and none is to be created).
	NewRS *appsv1.ReplicaSet
	// Deployment is d with its revision annotation and Progressing
	// condition as they should be after Create/Update succeeded.
	Deployment *appsv1.Deployment
}

// PlanNewReplicaSet brings d's new ReplicaSet up to date: the existing one
// gets revision max(old)+1 (keeping its earlier revisions in the
// revision-history annotation, which is what a rollback looks like), d's
// annotations and minReadySeconds; with create and none existing, a new one
// named <deployment>-<pod-template-hash> is planned, sized by
// NewRSReplicas. d is not modified.
func PlanNewReplicaSet(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, create bool, now time.Time) NewRSPlan {
	d = d.DeepCopy()
	newRevision := strconv.FormatInt(maxRevision(oldRSs)+1, 10)
	if newRS != nil {
		rs := newRS.DeepCopy()
		annotationsChanged := setNewRSAnnotations(d, rs, newRevision, true)
		plan := NewRSPlan{NewRS: rs, Deployment: d}
		if annotationsChanged || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			plan.Update = rs
		}
		setDeploymentRevision(d, rs.Annotations[RevisionAnnotation])
		if hasProgressDeadline(d) && GetCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet, fmt.Sprintf("Found new replica set %q", rs.Name), now))
		}
		return plan
	}
	if !create {
		return NewRSPlan{Deployment: d}
	}
	tmpl := *d.Spec.Template.DeepCopy()
	hash := ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	tmpl.Labels = maps.Clone(tmpl.Labels)
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[PodTemplateHashLabel] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[PodTemplateHashLabel] = hash
	zero := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, deploymentKind)},
			Labels:          maps.Clone(tmpl.Labels),
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: tmpl},
	}
	n := NewRSReplicas(d, append(append([]*appsv1.ReplicaSet(nil), oldRSs...), rs), rs)
	rs.Spec.Replicas = &n
	setNewRSAnnotations(d, rs, newRevision, false)
	setDeploymentRevision(d, newRevision)
	if hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated, fmt.Sprintf("Created new replica set %q", rs.Name), now))
	}
	return NewRSPlan{Create: rs, NewRS: rs, Deployment: d}
}

// NewRSReplicas is the size the new ReplicaSet may have now: all replicas
// for Recreate; for RollingUpdate, as many as fit under replicas+maxSurge
// counting every ReplicaSet's spec.replicas, never more than replicas.
func NewRSReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if !isRolling(d) {
		return replicasOf(d)
	}
	current := sumSpec(all)
	maxTotal := replicasOf(d) + MaxSurge(d)
	if current >= maxTotal {
		return rsReplicas(newRS)
	}
	up := min(maxTotal-current, replicasOf(d)-rsReplicas(newRS))
	return rsReplicas(newRS) + up
}

func setDeploymentRevision(d *appsv1.Deployment, revision string) bool {
	if d.Annotations[RevisionAnnotation] == revision {
		return false
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = revision
	return true
}

// setNewRSAnnotations copies d's annotations to rs, raises rs's revision to
// newRevision (appending the revision it had to the history when it had
// one) and, for a ReplicaSet about to be created, its replica annotations.
func setNewRSAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.Annotations {
		if skipCopyAnnotation[k] || rs.Annotations[k] == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	oldRevision, had := rs.Annotations[RevisionAnnotation]
	oldN, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false // unparsable revision: leave it alone as upstream does
		}
		oldN = 0
	}
	newN, _ := strconv.ParseInt(newRevision, 10, 64)
	if oldN < newN {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
		if had {
			rs.Annotations[RevisionHistoryAnnotation] = appendHistory(rs.Annotations[RevisionHistoryAnnotation], oldRevision)
		}
	}
	if !exists && setReplicasAnnotations(rs, replicasOf(d), replicasOf(d)+MaxSurge(d)) {
		changed = true
	}
	return changed
}

// appendHistory appends rev to the comma-separated history, dropping the
// oldest entries to stay within MaxRevisionHistoryChars.
func appendHistory(history, rev string) string {
	if history == "" {
		return rev
	}
	old := strings.Split(history, ",")
	total := len(history) + len(rev) + 1
	start := 0
	for total > MaxRevisionHistoryChars && start < len(old) {
		total -= len(old[start]) + 1
		start++
	}
	return strings.Join(append(old[start:], rev), ",")
}
