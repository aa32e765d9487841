// Package deployment is berth's Deployment controller: it rolls a
// Deployment's pod template out through ReplicaSets (one per template,
// named and labelled by the pod-template-hash), with the RollingUpdate and
// Recreate strategies, proportional scaling, revision history, pause and
// resume, and the Progressing/Available conditions `kubectl rollout status`
// reads. A rollback (`kubectl rollout undo`) patches the Deployment's
// template back to an old ReplicaSet's; the controller then finds that
// ReplicaSet as the new one and gives it the next revision.
//
// The decisions are pure functions of the Deployment, its ReplicaSets and
// the time (PlanNewReplicaSet, Rolling, Recreate, Sync, StatusOnly) that
// return a Plan: ReplicaSet writes in order, then the status to write. The
// Controller executes them.
package deployment

import (
	"fmt"
	"math"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// ActionKind says what an Action does.
type ActionKind string

// Action kinds.
const (
	// ActionScale updates a ReplicaSet to RS (new spec.replicas and replica
	// annotations).
	ActionScale ActionKind = "Scale"
	// ActionDelete deletes an old, empty ReplicaSet beyond the history limit.
	ActionDelete ActionKind = "Delete"
)

// Action is one ReplicaSet write.
type Action struct {
	Kind     ActionKind
	RS       *appsv1.ReplicaSet
	From, To int32
}

// Plan is the outcome of one step: the ReplicaSet writes in order, then
// the Deployment status to write.
type Plan struct {
	Actions []Action
	// Status is the new status; nil when it does not change.
	Status *appsv1.DeploymentStatus
	// RequeueAfter > 0 asks to look at the Deployment again after that
	// long (to notice a progress deadline passing).
	RequeueAfter time.Duration
}

// planner threads the ReplicaSets through a step, replacing each with its
// scaled copy so later decisions see earlier ones.
type planner struct {
	d       *appsv1.Deployment
	newRS   *appsv1.ReplicaSet
	oldRSs  []*appsv1.ReplicaSet
	now     time.Time
	actions []Action
}

func newPlanner(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, now time.Time) *planner {
	return &planner{d: d, newRS: newRS, oldRSs: append([]*appsv1.ReplicaSet(nil), oldRSs...), now: now}
}

func (p *planner) all() []*appsv1.ReplicaSet {
	if p.newRS == nil {
		return append([]*appsv1.ReplicaSet(nil), p.oldRSs...)
	}
	return append(append([]*appsv1.ReplicaSet(nil), p.oldRSs...), p.newRS)
}

// scale sets rs to n replicas (and refreshes its replica annotations);
// it reports whether the size changed.
func (p *planner) scale(rs *appsv1.ReplicaSet, n int32) bool {
	sizeChanged := rsReplicas(rs) != n
	cp := rs.DeepCopy()
	annChanged := setReplicasAnnotations(cp, replicasOf(p.d), replicasOf(p.d)+MaxSurge(p.d))
	if !sizeChanged && !annChanged {
		return false
	}
	from := rsReplicas(rs)
	cp.Spec.Replicas = &n
	p.actions = append(p.actions, Action{Kind: ActionScale, RS: cp, From: from, To: n})
	if p.newRS != nil && p.newRS.UID == rs.UID && p.newRS.Name == rs.Name {
		p.newRS = cp
	}
	for i := range p.oldRSs {
		if p.oldRSs[i].Name == rs.Name {
			p.oldRSs[i] = cp
		}
	}
	return sizeChanged
}

func (p *planner) find(name string) *appsv1.ReplicaSet {
	for _, rs := range p.all() {
		if rs.Name == name {
			return rs
		}
	}
	return nil
}

// Rolling is one RollingUpdate step: grow the new ReplicaSet within
// maxSurge, else shrink old ones within maxUnavailable (first the
// unhealthy pods, oldest ReplicaSet first), clean up history once the
// rollout is complete, and compute the status.
func Rolling(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, now time.Time) Plan {
	p := newPlanner(d, newRS, oldRSs, now)
	if p.reconcileNew() {
		return p.rolloutStatus()
	}
	if p.reconcileOld() {
		return p.rolloutStatus()
	}
	if deploymentComplete(d, &d.Status) {
		p.cleanup()
	}
	return p.rolloutStatus()
}

func (p *planner) reconcileNew() bool {
	if p.newRS == nil {
		return false
	}
	want := replicasOf(p.d)
	switch cur := rsReplicas(p.newRS); {
	case cur == want:
		return false
	case cur > want:
		return p.scale(p.newRS, want)
	}
	return p.scale(p.newRS, NewRSReplicas(p.d, p.all(), p.newRS))
}

func (p *planner) reconcileOld() bool {
	if sumSpec(p.oldRSs) == 0 {
		return false
	}
	allPods := sumSpec(p.all())
	minAvailable := replicasOf(p.d) - MaxUnavailable(p.d)
	newUnavailable := rsReplicas(p.newRS)
	if p.newRS != nil {
		newUnavailable -= p.newRS.Status.AvailableReplicas
	}
	maxScaledDown := allPods - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false
	}
	cleaned, settled := p.cleanupUnhealthy(maxScaledDown)
	if !settled {
		// Wait for the lagging status: its update requeues the Deployment.
		return true
	}
	scaled := p.scaleDownOld()
	return cleaned+scaled > 0
}

// cleanupUnhealthy removes up to limit unavailable pods from old
// ReplicaSets, oldest first. It stops with settled false at an old
// ReplicaSet whose status reports more available pods than its
// spec.replicas (the ReplicaSet controller has not yet carried out an
// earlier scale-down): it has no unhealthy pods to remove, and its stale
// availability must not be counted towards scaling further down. Upstream
// refuses the step there too ("invalid request to scale down").
func (p *planner) cleanupUnhealthy(limit int32) (cleaned int32, settled bool) {
	old := append([]*appsv1.ReplicaSet(nil), p.oldRSs...)
	byCreation(old)
	for _, rs := range old {
		if cleaned >= limit {
			break
		}
		if rsReplicas(rs) == 0 || rsReplicas(rs) == rs.Status.AvailableReplicas {
			continue
		}
		if rs.Status.AvailableReplicas > rsReplicas(rs) {
			return cleaned, false
		}
		n := min(limit-cleaned, rsReplicas(rs)-rs.Status.AvailableReplicas)
		p.scale(rs, rsReplicas(rs)-n)
		cleaned += n
	}
	return cleaned, true
}

// scaleDownOld scales old ReplicaSets down, oldest first, as far as the
// available pods allow while keeping replicas-maxUnavailable available.
func (p *planner) scaleDownOld() int32 {
	minAvailable := replicasOf(p.d) - MaxUnavailable(p.d)
	available := sumAvailable(p.all())
	if available <= minAvailable {
		return 0
	}
	budget := available - minAvailable
	old := append([]*appsv1.ReplicaSet(nil), p.oldRSs...)
	byCreation(old)
	var total int32
	for _, rs := range old {
		if total >= budget {
			break
		}
		rs = p.find(rs.Name)
		if rsReplicas(rs) == 0 {
			continue
		}
		n := min(rsReplicas(rs), budget-total)
		p.scale(rs, rsReplicas(rs)-n)
		total += n
	}
	return total
}

// Recreate is one Recreate step: scale every old ReplicaSet to zero, wait
// until none of their pods runs (oldPodsRunning), then scale the new one
// to replicas. needNewRS says the new ReplicaSet must be created first (call
// again with it).
func Recreate(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, oldPodsRunning bool, now time.Time) (plan Plan, needNewRS bool) {
	p := newPlanner(d, newRS, oldRSs, now)
	scaled := false
	for _, rs := range activeRSs(oldRSs) {
		if p.scale(rs, 0) {
			scaled = true
		}
	}
	if scaled || oldPodsRunning {
		return p.rolloutStatus(), false
	}
	if newRS == nil {
		return Plan{}, true
	}
	p.scale(p.newRS, replicasOf(d))
	if deploymentComplete(d, &d.Status) {
		p.cleanup()
	}
	return p.rolloutStatus(), false
}

// Sync is the step for a paused Deployment or a scaling event (replicas
// changed, template not): scale the ReplicaSets proportionally, clean up
// history when paused, and compute the status (progress is not judged).
func Sync(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, now time.Time) Plan {
	p := newPlanner(d, newRS, oldRSs, now)
	p.proportionalScale()
	if d.Spec.Paused {
		p.cleanup()
	}
	return p.statusOnly()
}

// StatusOnly computes the status without changing any ReplicaSet (a
// Deployment being deleted).
func StatusOnly(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, now time.Time) Plan {
	return newPlanner(d, newRS, oldRSs, now).statusOnly()
}

// IsScalingEvent reports whether some active ReplicaSet was sized for a
// different replicas count than d's (its desired-replicas annotation).
func IsScalingEvent(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) bool {
	for _, rs := range activeRSs(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)) {
		if want, ok := intAnnotation(rs, DesiredReplicasAnnotation); ok && want != replicasOf(d) {
			return true
		}
	}
	return false
}

func (p *planner) proportionalScale() {
	// One active ReplicaSet (or none: the newest): it takes all replicas.
	if only := p.activeOrLatest(); only != nil {
		if rsReplicas(only) != replicasOf(p.d) {
			p.scale(only, replicasOf(p.d))
		}
		return
	}
	if isSaturated(p.d, p.newRS) {
		for _, rs := range activeRSs(p.oldRSs) {
			p.scale(rs, 0)
		}
		return
	}
	if !isRolling(p.d) {
		return
	}
	active := activeRSs(p.all())
	allowed := replicasOf(p.d)
	if allowed > 0 {
		allowed += MaxSurge(p.d)
	}
	toAdd := allowed - sumSpec(active)
	if toAdd > 0 {
		sortBySize(active, true)
	} else {
		sortBySize(active, false)
	}
	sizes := map[string]int32{}
	var added int32
	for _, rs := range active {
		if toAdd == 0 {
			sizes[rs.Name] = rsReplicas(rs)
			continue
		}
		prop := p.proportion(rs, toAdd, added)
		sizes[rs.Name] = rsReplicas(rs) + prop
		added += prop
	}
	if added < toAdd && len(active) > 0 {
		first := active[0].Name
		sizes[first] = max(0, sizes[first]+toAdd-added)
	}
	for _, rs := range active {
		p.scale(p.find(rs.Name), sizes[rs.Name])
	}
}

// proportion is rs's share of toAdd: its size scaled by the new
// replicas+maxSurge over the max-replicas it was sized for.
func (p *planner) proportion(rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	if rsReplicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if replicasOf(p.d) == 0 {
		fraction = -rsReplicas(rs)
	} else {
		total := replicasOf(p.d) + MaxSurge(p.d)
		annotated, ok := intAnnotation(rs, MaxReplicasAnnotation)
		if !ok || annotated == 0 {
			annotated = p.d.Status.Replicas
		}
		if annotated == 0 {
			fraction = 0
		} else {
			fraction = int32(math.Round(float64(rsReplicas(rs))*float64(total)/float64(annotated))) - rsReplicas(rs)
		}
	}
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

func (p *planner) activeOrLatest() *appsv1.ReplicaSet {
	old := append([]*appsv1.ReplicaSet(nil), p.oldRSs...)
	byCreation(old)
	active := activeRSs(p.all())
	switch len(active) {
	case 0:
		if p.newRS != nil {
			return p.newRS
		}
		if len(old) > 0 {
			return old[len(old)-1]
		}
		return nil
	case 1:
		return active[0]
	}
	return nil
}

func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	want, ok := intAnnotation(rs, DesiredReplicasAnnotation)
	return ok && want == replicasOf(d) && rsReplicas(rs) == replicasOf(d) && rs.Status.AvailableReplicas == replicasOf(d)
}

// sortBySize: larger first; ties newer first (largerNewer) or older first.
func sortBySize(rss []*appsv1.ReplicaSet, newerFirst bool) {
	sort.SliceStable(rss, func(i, j int) bool {
		if rsReplicas(rss[i]) != rsReplicas(rss[j]) {
			return rsReplicas(rss[i]) > rsReplicas(rss[j])
		}
		a, b := rss[i].CreationTimestamp, rss[j].CreationTimestamp
		if a.Equal(&b) {
			return rss[i].Name > rss[j].Name == newerFirst
		}
		if newerFirst {
			return b.Before(&a)
		}
		return a.Before(&b)
	})
}

// cleanup deletes the oldest old ReplicaSets beyond revisionHistoryLimit
// that are empty and settled.
func (p *planner) cleanup() {
	if p.d.Spec.RevisionHistoryLimit == nil {
		return
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range p.oldRSs {
		if rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := len(alive) - int(*p.d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return
	}
	sort.SliceStable(alive, func(i, j int) bool {
		ri, rj := Revision(alive[i]), Revision(alive[j])
		if ri == rj {
			return alive[i].CreationTimestamp.Before(&alive[j].CreationTimestamp)
		}
		return ri < rj
	})
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || rsReplicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		p.actions = append(p.actions, Action{Kind: ActionDelete, RS: rs})
	}
}

// calculateStatus is the status from the ReplicaSets' statuses, with the
// Available condition.
func (p *planner) calculateStatus() appsv1.DeploymentStatus {
	all := p.all()
	var replicas, ready, available int32
	for _, rs := range all {
		replicas += rs.Status.Replicas
		ready += rs.Status.ReadyReplicas
		available += rs.Status.AvailableReplicas
	}
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  p.d.Generation,
		Replicas:            replicas,
		ReadyReplicas:       ready,
		AvailableReplicas:   available,
		UnavailableReplicas: max(0, sumSpec(all)-available),
		CollisionCount:      p.d.Status.CollisionCount,
	}
	if p.newRS != nil {
		st.UpdatedReplicas = p.newRS.Status.Replicas
	}
	for _, c := range p.d.Status.Conditions {
		st.Conditions = append(st.Conditions, *c.DeepCopy())
	}
	if available >= replicasOf(p.d)-MaxUnavailable(p.d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumAvailable, "Deployment has minimum availability.", p.now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumUnavailable, "Deployment does not have minimum availability.", p.now))
	}
	return st
}

func (p *planner) statusOnly() Plan {
	st := p.calculateStatus()
	plan := Plan{Actions: p.actions}
	if !equality.Semantic.DeepEqual(p.d.Status, st) {
		plan.Status = &st
	}
	return plan
}

// rolloutStatus is the status with progress judged: Progressing True while
// the rollout advances (NewReplicaSetAvailable once complete), False with
// ProgressDeadlineExceeded when it has not advanced for
// progressDeadlineSeconds; ReplicaSet failures are carried over.
func (p *planner) rolloutStatus() Plan {
	d := p.d
	st := p.calculateStatus()
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := GetCondition(d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewRSAvailable
	if hasProgressDeadline(d) && !complete {
		switch {
		case deploymentComplete(d, &st):
			msg := fmt.Sprintf("Deployment %q has successfully progressed.", d.Name)
			if p.newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has successfully progressed.", p.newRS.Name)
			}
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSAvailable, msg, p.now))
		case deploymentProgressing(d, &st):
			msg := fmt.Sprintf("Deployment %q is progressing.", d.Name)
			if p.newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q is progressing.", p.newRS.Name)
			}
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, msg, p.now)
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&st, appsv1.DeploymentProgressing)
			}
			st.Conditions = append(st.Conditions, c)
		case timedOut(d, &st, p.now):
			msg := fmt.Sprintf("Deployment %q has timed out progressing.", d.Name)
			if p.newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has timed out progressing.", p.newRS.Name)
			}
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonTimedOut, msg, p.now))
		}
	}
	if f := p.replicaFailure(); f != nil {
		setCondition(&st, *f)
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}
	plan := Plan{Actions: p.actions}
	if equality.Semantic.DeepEqual(d.Status, st) {
		plan.RequeueAfter = p.requeueStuck(&st)
		return plan
	}
	plan.Status = &st
	return plan
}

func (p *planner) replicaFailure() *appsv1.DeploymentCondition {
	rss := p.oldRSs
	if p.newRS != nil {
		rss = append([]*appsv1.ReplicaSet{p.newRS}, rss...)
	}
	for _, rs := range rss {
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return &appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: c.Status, Reason: c.Reason, Message: c.Message, LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime}
			}
		}
	}
	return nil
}

// requeueStuck is when to look again so a stalled rollout is marked timed
// out on time (0: no need).
func (p *planner) requeueStuck(st *appsv1.DeploymentStatus) time.Duration {
	cur := GetCondition(p.d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(p.d) || cur == nil || cur.Reason == ReasonNewRSAvailable || cur.Reason == ReasonTimedOut || deploymentComplete(p.d, st) {
		return 0
	}
	after := cur.LastUpdateTime.Add(time.Duration(*p.d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(p.now)
	if after < time.Second {
		return time.Second
	}
	return after + time.Second
}

// deploymentComplete: every replica updated and available, and the status
// describes the current generation.
func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	n := replicasOf(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

// deploymentProgressing: more pods updated, ready or available, or fewer
// old pods, than the last recorded status says.
func deploymentProgressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

func timedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := GetCondition(*st, appsv1.DeploymentProgressing)
	if c == nil || c.Reason == ReasonNewRSAvailable {
		return false
	}
	if c.Reason == ReasonTimedOut {
		return true
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(now)
}

// PausedCondition sets Progressing=Unknown with reason DeploymentPaused on
// a paused Deployment (DeploymentResumed once resumed, which restarts the
// progress deadline); it reports whether st changed. A timed-out rollout
// keeps its condition.
func PausedCondition(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	cur := GetCondition(*st, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == ReasonTimedOut {
		return false
	}
	pausedSet := cur != nil && cur.Reason == ReasonPaused
	switch {
	case d.Spec.Paused && !pausedSet:
		setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused", now))
		return true
	case !d.Spec.Paused && pausedSet:
		setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed", now))
		return true
	}
	return false
}
