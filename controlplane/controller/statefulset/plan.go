package statefulset

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"berth/controlplane/controller"
	"berth/controlplane/controller/replicaset"
)

// State is what a sync decides from: the stateful set, the pods it owns,
// the claims in its namespace by name, the set with its current and its
// update revision's template applied, those revisions' names, the
// collision count, and the time.
type State struct {
	Set                   *appsv1.StatefulSet
	Pods                  []*corev1.Pod
	Claims                map[string]*corev1.PersistentVolumeClaim
	CurrentSet, UpdateSet *appsv1.StatefulSet
	Current, Update       string
	CollisionCount        int32
	Now                   time.Time
}

// Op is what a Step does.
type Op int

const (
	// OpCreate creates Step.Claims, then Step.Pod.
	OpCreate Op = iota
	// OpClaims creates Step.Claims and updates Step.ClaimUpdates (a
	// pending pod's missing claims; a pod's claims whose owners the
	// retention policy wants changed).
	OpClaims
	// OpUpdate creates Step.Claims, updates Step.ClaimUpdates, then
	// updates Step.Pod (its identity or storage repaired).
	OpUpdate
	// OpDelete deletes Step.Pod.
	OpDelete
)

func (o Op) String() string {
	return [...]string{"create", "claims", "update", "delete"}[o]
}

// Step is one action of a Plan.
type Step struct {
	Op           Op
	Pod          *corev1.Pod
	Claims       []*corev1.PersistentVolumeClaim
	ClaimUpdates []*corev1.PersistentVolumeClaim
	// Err, when set, is why the step cannot run yet (a claim it needs is
	// being deleted): the executor stops with it.
	Err error
	// ForUpdate: the pod is deleted to be recreated at the update revision.
	ForUpdate bool
}

// Plan is a sync's actions, to be executed in order (stopping at the first
// error), and the status to write.
type Plan struct {
	Steps  []Step
	Status appsv1.StatefulSetStatus
}

// isRunningAndReady: phase Running and the Ready condition true.
func isRunningAndReady(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && controller.PodReady(p)
}

func isTerminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }

func isCreated(p *corev1.Pod) bool { return p.Status.Phase != "" }

// ComputeStatus counts pods as upstream's status: replicas (created),
// ready (running and ready), available (ready for minReadySeconds),
// current and updated (live pods labelled with either revision).
func ComputeStatus(s State) appsv1.StatefulSetStatus {
	cc := s.CollisionCount
	st := appsv1.StatefulSetStatus{ObservedGeneration: s.Set.Generation, CurrentRevision: s.Current, UpdateRevision: s.Update, CollisionCount: &cc}
	for _, p := range s.Pods {
		if !isCreated(p) {
			continue
		}
		st.Replicas++
		if isRunningAndReady(p) {
			st.ReadyReplicas++
			if replicaset.IsAvailable(p, s.Set.Spec.MinReadySeconds, s.Now) {
				st.AvailableReplicas++
			}
		}
		if !isTerminating(p) {
			if Revision(p) == s.Current {
				st.CurrentReplicas++
			}
			if Revision(p) == s.Update {
				st.UpdatedReplicas++
			}
		}
	}
	return st
}

// completeRollingUpdate marks a finished rolling update: every replica
// updated and ready makes the update revision current.
func completeRollingUpdate(set *appsv1.StatefulSet, st *appsv1.StatefulSetStatus) {
	n := int32(replicasOf(set))
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		st.UpdatedReplicas == n && st.ReadyReplicas == n && st.Replicas == n {
		st.CurrentReplicas = st.UpdatedReplicas
		st.CurrentRevision = st.UpdateRevision
	}
}

// Decide plans a sync as upstream's StatefulSet control does. Pods are
// sorted into replicas (ordinals in [start, start+replicas)) and condemned
// ones (beyond). Each replica in ordinal order: a failed or succeeded pod
// is deleted to be recreated; a missing one is created (with its claims)
// from the current revision below the partition and the update revision
// from it on; a pending pod gets its missing claims; a pod whose identity,
// storage or claim owners drifted is repaired. Then condemned pods are
// deleted, highest ordinal first. With OrderedReady (monotonic) management
// planning stops at the first step or at a replica that is not yet
// running, ready and available (a condemned pod waits for its predecessors
// too, except the first unhealthy one); with Parallel it goes on. Last, the
// RollingUpdate strategy deletes the highest-ordinal pod at or above the
// partition that is not at the update revision, one at a time, waiting for
// unavailable ones; OnDelete leaves that to the user.
func Decide(s State) (plan Plan) {
	set := s.Set
	plan.Status = ComputeStatus(s)
	defer completeRollingUpdate(set, &plan.Status)
	start, n := startOrdinal(set), replicasOf(set)
	replicas := make([]*corev1.Pod, n)
	var condemned []*corev1.Pod
	for _, p := range s.Pods {
		switch o := Ordinal(p); {
		case inRange(set, p):
			replicas[o-start] = p
		case o >= 0:
			condemned = append(condemned, p)
		}
	}
	placeholder := map[*corev1.Pod]bool{}
	for i := range replicas {
		if replicas[i] == nil {
			replicas[i] = versionedPod(s, start+i)
			placeholder[replicas[i]] = true
		}
	}
	slices.SortStableFunc(condemned, func(a, b *corev1.Pod) int { return Ordinal(b) - Ordinal(a) })
	minReady := set.Spec.MinReadySeconds
	available := func(p *corev1.Pod) bool { return replicaset.IsAvailable(p, minReady, s.Now) }
	unavailable := func(p *corev1.Pod) bool { return !available(p) || isTerminating(p) }
	var firstUnavailable *corev1.Pod
	for _, p := range replicas {
		if unavailable(p) {
			firstUnavailable = p
			break
		}
	}
	if firstUnavailable == nil {
		for i := len(condemned) - 1; i >= 0; i-- {
			if unavailable(condemned[i]) {
				firstUnavailable = condemned[i]
				break
			}
		}
	}
	if set.DeletionTimestamp != nil {
		return plan
	}
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement

	for _, p := range replicas {
		stop := s.planReplica(&plan, p, placeholder[p], monotonic)
		if stop && monotonic {
			return plan
		}
	}
	for _, p := range condemned {
		if !s.claimsMatch(p) {
			plan.Steps = append(plan.Steps, Step{Op: OpClaims, Pod: p, ClaimUpdates: s.claimFixes(p)})
		}
	}
	for _, p := range condemned {
		if isTerminating(p) {
			if monotonic {
				return plan
			}
			continue
		}
		if monotonic && p != firstUnavailable && (!isRunningAndReady(p) || !available(p)) {
			return plan
		}
		plan.Steps = append(plan.Steps, Step{Op: OpDelete, Pod: p})
		if monotonic {
			return plan
		}
	}
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return plan
	}
	updateMin := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		updateMin = int(*ru.Partition)
	}
	for target := len(replicas) - 1; target >= updateMin; target-- {
		p := replicas[target]
		if !placeholder[p] && Revision(p) != s.Update && !isTerminating(p) {
			plan.Steps = append(plan.Steps, Step{Op: OpDelete, Pod: p, ForUpdate: true})
			plan.Status.CurrentReplicas--
			return plan
		}
		if unavailable(p) {
			return plan
		}
	}
	return plan
}

// versionedPod is the new pod for ordinal: from the current revision below
// the partition, from the update revision otherwise.
func versionedPod(s State, ordinal int) *corev1.Pod {
	cur := s.CurrentSet
	ru := cur.Spec.UpdateStrategy.RollingUpdate
	start := startOrdinal(cur)
	useCurrent := cur.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru == nil && ordinal < start+int(cur.Status.CurrentReplicas) ||
		ru != nil && ru.Partition != nil && ordinal < start+int(*ru.Partition)
	if useCurrent {
		return NewPod(cur, ordinal, s.Current)
	}
	return NewPod(s.UpdateSet, ordinal, s.Update)
}

// planReplica plans one replica (upstream's processReplica); it reports
// whether a monotonic sync must stop there.
func (s State) planReplica(plan *Plan, p *corev1.Pod, isNew, monotonic bool) bool {
	if !isNew && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
		if !isTerminating(p) {
			plan.Steps = append(plan.Steps, Step{Op: OpDelete, Pod: p})
		}
		return true
	}
	if isNew {
		if s.claimIsStale(p) {
			return true // a claim still owned by an earlier pod of this name
		}
		missing, err := s.missingClaims(p)
		plan.Steps = append(plan.Steps, Step{Op: OpCreate, Pod: p, Claims: missing, Err: err})
		return true
	}
	if p.Status.Phase == corev1.PodPending {
		missing, err := s.missingClaims(p)
		if fixes := s.claimFixes(p); len(missing) > 0 || len(fixes) > 0 || err != nil {
			plan.Steps = append(plan.Steps, Step{Op: OpClaims, Pod: p, Claims: missing, ClaimUpdates: fixes, Err: err})
		}
	}
	if monotonic && (isTerminating(p) || !isRunningAndReady(p) || !replicaset.IsAvailable(p, s.Set.Spec.MinReadySeconds, s.Now)) {
		return true
	}
	set := s.UpdateSet
	if identityMatches(set, p) && storageMatches(set, p) && s.claimsMatch(p) {
		return false
	}
	fixed := p.DeepCopy()
	step := Step{Op: OpUpdate, Pod: fixed}
	if !identityMatches(set, fixed) {
		updateIdentity(set, fixed)
	}
	if !storageMatches(set, fixed) {
		updateStorage(set, fixed)
		step.Claims, step.Err = s.missingClaims(fixed)
	}
	step.ClaimUpdates = s.claimFixes(fixed)
	plan.Steps = append(plan.Steps, step)
	return false
}

// claimIsStale: with whenScaled Delete, one of p's claims still names an
// earlier pod of p's name as owner (the garbage collector is about to
// delete it), so p must wait.
func (s State) claimIsStale(p *corev1.Pod) bool {
	if retention(s.Set).WhenScaled == retain {
		return false
	}
	for _, c := range Claims(s.Set, p) {
		if have := s.Claims[c.Name]; have != nil && hasStaleOwnerRef(have, p, podKind) {
			return true
		}
	}
	return false
}

// missingClaims returns p's claims that do not exist yet, owned as the
// retention policy wants; an error names one that is being deleted.
func (s State) missingClaims(p *corev1.Pod) ([]*corev1.PersistentVolumeClaim, error) {
	var out []*corev1.PersistentVolumeClaim
	var err error
	for _, t := range s.Set.Spec.VolumeClaimTemplates {
		c := Claims(s.Set, p)[t.Name]
		have := s.Claims[c.Name]
		switch {
		case have == nil:
			fixClaimOwners(c, s.Set, p)
			out = append(out, c)
		case have.DeletionTimestamp != nil && err == nil:
			err = fmt.Errorf("pvc %s is being deleted", c.Name)
		}
	}
	return out, err
}

// claimsMatch: every existing claim of p is owned as the retention policy
// wants.
func (s State) claimsMatch(p *corev1.Pod) bool {
	return len(s.claimFixes(p)) == 0
}

// claimFixes returns copies of p's existing claims whose owners must
// change, with the owners fixed.
func (s State) claimFixes(p *corev1.Pod) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, t := range s.Set.Spec.VolumeClaimTemplates {
		have := s.Claims[ClaimName(s.Set, &t, Ordinal(p))]
		if have == nil || claimOwnerUpToDate(have, s.Set, p) {
			continue
		}
		fixed := have.DeepCopy()
		fixClaimOwners(fixed, s.Set, p)
		out = append(out, fixed)
	}
	return out
}
